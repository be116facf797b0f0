/*
 * tools/cmd_mkmodel.c — `sprig mkmodel`: write a synthetic GGUF (llama, qwen2, qwen3, gemma2, gemma3, gemma4,
 * gemma4-assistant: a Gemma 4 MTP drafter matched to a gemma4 --target; qwen35: the Qwen 3.5 hybrid,
 * optionally with its MTP layer) with
 * seeded random weights (src/mkmodel/mkmodel.c). A preset gives the shape; flags
 * override it. Bad flags and impossible shapes exit 2 with a message naming
 * the flag; a failure while writing exits 1.
 */
#include "cli.h"
#include "mkmodel/mkmodel.h"
#include "gguf/quant_mix.h"
#include "mkmodel/widen.h"
#include "tensor/types.h"
#include "base/timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sprig mkmodel [options] -o OUT.gguf\n"
            "\n"
            "Write a synthetic model: seeded random weights (~N(0, 0.02)), F32 norms,\n"
            "a valid llama tokenizer (or a real one, --vocab-from). The same flags and\n"
            "seed give the same bytes.\n"
            "\n"
            "options (flags override the preset):\n"
            "  --preset NAME    %s (default tiny)\n"
            "  --arch A         %s (default llama; qwen2 adds q/k/v biases, qwen3\n"
            "                   per-head q/k norms and a tied output; gemma4 is the dense\n"
            "                   Gemma 4 layout, rope base 1e6 and rms epsilon 1e-6 by default)\n"
            "  --head-dim N     head size, written as attention.key_length (default dim / heads;\n"
            "                   gemma4: the global layers')\n"
            "  --window N       gemma2, gemma3: sliding-window layers of window N (attention.sliding_window);\n"
            "                   gemma4: the sliding layers' window (default min(512, ctx))\n"
            "  --swa-pattern N  gemma3: every N-th layer global, the others sliding (default 6);\n"
            "                   gemma4: the default --swa-layers' period (default 5)\n"
            "  --softcap X      gemma3: final logit soft-capping X (final_logit_softcapping);\n"
            "                   gemma2, gemma4: default 30\n"
            "  --attn-softcap X gemma2: attention score soft-capping (attn_logit_softcapping, default 50)\n"
            "  --swa-layers S   gemma4: one letter per layer, s sliding or g global (default:\n"
            "                   four sliding then one global, repeating, the last layer global;\n"
            "                   with --shared-kv the last KV layer global, the one before sliding)\n"
            "  --head-dim-swa N gemma4: the sliding layers' head size (default --head-dim)\n"
            "  --kv-heads-global N  gemma4: the global layers' kv heads (default --kv-heads)\n"
            "  --shared-kv N    gemma4: the last N layers reuse earlier layers' KV, no attn_k /\n"
            "                   attn_v of their own (default 0, at most layers - 2)\n"
            "  --per-layer-embd N  gemma4: per-layer input embeddings, N per layer (default 0)\n"
            "  --no-global-v    gemma4: no attn_v on global layers (llama.cpp uses K as V)\n"
            "  --target T       gemma4-assistant (required): the gemma4 GGUF it drafts for; its\n"
            "                   tokenizer, context, window, head sizes, kv heads, RoPE and rms\n"
            "                   epsilon are T's, embedding_length_out is T's dim. The shape\n"
            "                   flags are the assistant's own: --dim (default T's / 2, rounded\n"
            "                   down to a multiple of 32), --layers (2), --heads (T's), --ffn\n"
            "                   (4 x dim), --swa-layers (all s but the last, which is g when\n"
            "                   T's last layer is global: the sliding layers read T's layer\n"
            "                   n-2, which must be sliding, the global ones T's layer n-1,\n"
            "                   which must be global)\n"
            "  --masked-embd    gemma4-assistant: also write masked_embd_centroids.weight and\n"
            "                   masked_embd_ordering (one element each; llama.cpp loads them\n"
            "                   and never uses them)\n"
            "  qwen3moe (qwen3's attention, routed experts instead of the FFN), qwen35moe (qwen35's\n"
            "  layers with the experts and a gated shared expert):\n"
            "  --experts E      expert_count (default 8)\n"
            "  --experts-used K experts each token runs, expert_used_count (default 2)\n"
            "  --expert-ffn F   an expert's width, expert_feed_forward_length (default --ffn)\n"
            "  --shared-expert-ffn S  qwen35moe: the shared expert's width (default --ffn)\n"
            "  --expert-scales        qwen3moe, qwen35moe: write llama.cpp's per-expert output scales\n"
            "                         ffn_{gate,up,down}_exps.scale [E] (the MTP layer's too)\n"
            "  qwen35 (dense Qwen 3.5: gated-delta-net linear-attention layers and gated\n"
            "  full-attention layers; rope base 1e7 and rms epsilon 1e-6 by default, tied output):\n"
            "  --ssm-state N    linear attention's key / value head size, ssm.state_size (default 32)\n"
            "  --ssm-v-heads N  its value heads, ssm.time_step_rank (default --heads)\n"
            "  --ssm-k-heads N  its key / query heads, ssm.group_count, dividing --ssm-v-heads\n"
            "                   (default --ssm-v-heads)\n"
            "  --ssm-conv N     its convolution's kernel, ssm.conv_kernel (default 4)\n"
            "  --full-attn-interval N  every N-th layer full attention, the others linear\n"
            "                   (full_attention_interval; default 4, or --layers when fewer)\n"
            "  --recurrent-layers S  instead: one letter per layer, r linear or a full attention\n"
            "                   (attention.recurrent_layers, a bool per block)\n"
            "  --rot N          rotated dimensions per head, rope.dimension_count (default head / 4)\n"
            "  --rope-sections A,B,C,D  rope.dimension_sections (IMROPE; default: the --rot / 2\n"
            "                   pairs spread over the first three as Qwen 3.5's 11,11,10,0 for 32)\n"
            "  --mtp, --no-mtp  append the MTP layer (nextn_predict_layers 1) or not (default: not;\n"
            "                   the qwen35-0.8b preset has it)\n"
            "  --mtp-head       the MTP layer's own nextn.embed_tokens and nextn.shared_head_head\n"
            "  --vocab-from F   copy every tokenizer.* key of the GGUF F (vocab = its size)\n"
            "  --rope-scaling S none or llama3 (llama: a rope_freqs tensor, factor 8, as converted)\n"
            "  --tied, --untied output.weight absent (tied to token_embd) or present\n"
            "  --std X          standard deviation of the matrices (default 0.02)\n"
            "  --dim N          embedding length\n"
            "  --layers N       block count\n"
            "  --heads N        attention heads\n"
            "  --kv-heads N     key/value heads (GQA; gemma4: the sliding layers')\n"
            "  --ffn N          feed-forward length\n"
            "  --vocab N        vocabulary size (>= 260)\n"
            "  --ctx N          context length recorded in the file\n"
            "  --type T         weights: f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1\n"
            "                   (every matrix in that type), or a llama.cpp file type: q2_k,\n"
            "                   q3_k_s, q3_k_m (q3_k), q3_k_l, q4_k_s, q4_k_m (q4_k), q5_k_s,\n"
            "                   q5_k_m (q5_k), q6_k, with llama-quantize's per-tensor mix\n"
            "  --pure           every matrix in the file type's base type (no mix)\n"
            "  --seed N         random seed (default 1)\n"
            "  --rope-base X    llama.rope.freq_base (default 10000)\n"
            "  --name NAME      general.name\n"
            "  --chat-template TEXT  record TEXT as tokenizer.chat_template\n"
            "  --widen SRC      instead of random weights, embed the llama model SRC in\n"
            "                   this shape, computing what SRC computes (its vocabulary,\n"
            "                   tokenizer and context; zeros elsewhere; see src/mkmodel/widen.h)\n"
            "  --widen-mtp HEAD --mtp-out PATH  with --widen: also widen SRC's MTP assistant\n"
            "                   head HEAD into PATH, so it drafts for the widened model\n"
            "  -t, --threads N  generator threads (default: all CPUs)\n"
            "  -o, --out PATH   output file (required)\n"
            "  -q, --quiet      no summary on stderr\n"
            "  -h, --help       this text\n",
            sprig_mkmodel_preset_names(), sprig_mkmodel_arch_names());
}

struct int_flag { const char *flag; int *dst; long long lo, hi; };

int sprig_cmd_mkmodel(int argc, char **argv)
{
    const char *preset = "tiny";
    bool assistant = false, preset_given = false;   /* --arch gemma4-assistant: the shape is matched to --target */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--preset")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sprig mkmodel: --preset: missing value\n");
                return 2;
            }
            preset = argv[++i];
            preset_given = true;
        }
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) assistant = !strcmp(argv[++i], "gemma4-assistant");
    }
    if (assistant && preset_given) {
        fprintf(stderr, "sprig mkmodel: --preset: gemma4-assistant takes its shape from --target (and --dim, --layers, --heads, "
                "--ffn)\n");
        return 2;
    }
    struct sprig_mkmodel_params p;
    sprig_error err = { 0 };
    if (sprig_mkmodel_preset(preset, &p, &err) != SPRIG_OK) {
        fprintf(stderr, "sprig mkmodel: --preset: %s\n", err.msg);
        return 2;
    }
    if (assistant) p.dim = p.n_layers = p.n_heads = p.ffn = 0;   /* 0: derived from the target */
    const char *out = NULL, *widen = NULL, *widen_mtp = NULL, *mtp_out = NULL;
    bool quiet = false, pure = false;
    /* what a gemma4-assistant takes from its target */
    static const char *const from_target[] = {
        "--kv-heads", "--vocab", "--ctx", "--head-dim", "--head-dim-swa", "--kv-heads-global", "--window", "--swa-pattern",
        "--softcap", "--shared-kv", "--per-layer-embd", "--no-global-v", "--vocab-from", "--rope-base", "--rope-scaling",
        "--tied", "--untied", "--widen",
    };
    const struct int_flag ints[] = {
        { "--dim", &p.dim, 1, 1 << 16 }, { "--layers", &p.n_layers, 1, 512 }, { "--heads", &p.n_heads, 1, 1 << 12 },
        { "--kv-heads", &p.n_kv_heads, 1, 1 << 12 }, { "--ffn", &p.ffn, 1, 1 << 20 }, { "--vocab", &p.vocab, 260, 1 << 20 },
        { "--ctx", &p.ctx, 1, 1 << 24 }, { "--head-dim", &p.head_dim, 2, 4096 }, { "--window", &p.window, 1, 1 << 24 }, { "--swa-pattern", &p.swa_pattern, 1, 4096 }, { "--threads", &p.n_threads, 1, 1024 }, { "-t", &p.n_threads, 1, 1024 },
        { "--head-dim-swa", &p.head_dim_swa, 2, 4096 }, { "--kv-heads-global", &p.n_kv_heads_global, 1, 1 << 12 },
        { "--shared-kv", &p.shared_kv, 0, 512 }, { "--per-layer-embd", &p.per_layer_embd, 0, 1 << 16 },
        { "--ssm-state", &p.ssm_state, 1, 4096 }, { "--ssm-v-heads", &p.ssm_v_heads, 1, 4096 },
        { "--ssm-k-heads", &p.ssm_k_heads, 1, 4096 }, { "--ssm-conv", &p.ssm_conv, 2, 64 },
        { "--full-attn-interval", &p.full_attn_interval, 1, 512 }, { "--rot", &p.n_rot, 2, 4096 },
        { "--experts", &p.n_experts, 1, 512 }, { "--experts-used", &p.n_experts_used, 1, 512 },
        { "--expert-ffn", &p.expert_ffn, 1, 1 << 20 }, { "--shared-expert-ffn", &p.shared_expert_ffn, 1, 1 << 20 },
    };
    bool rope_base_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--preset")) { i++; continue; }
        for (size_t k = 0; assistant && k < sizeof from_target / sizeof from_target[0]; k++)
            if (!strcmp(a, from_target[k])) {
                fprintf(stderr, "sprig mkmodel: %s: not for gemma4-assistant (its vocabulary, context, head sizes, kv heads, window "
                        "and RoPE are --target's; its output head is its token_embd)\n", a);
                return 2;
            }
        if (!strcmp(a, "--masked-embd")) { p.masked_embd = true; continue; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { quiet = true; continue; }
        if (!strcmp(a, "--pure")) { pure = true; continue; }
        if (!strcmp(a, "--tied")) { p.output = SPRIG_MKMODEL_OUTPUT_TIED; continue; }
        if (!strcmp(a, "--untied")) { p.output = SPRIG_MKMODEL_OUTPUT_UNTIED; continue; }
        if (!strcmp(a, "--no-global-v")) { p.no_global_v = true; continue; }
        if (!strcmp(a, "--mtp")) { p.mtp = true; continue; }
        if (!strcmp(a, "--no-mtp")) { p.mtp = false; continue; }
        if (!strcmp(a, "--mtp-head")) { p.mtp_head = true; continue; }
        if (!strcmp(a, "--expert-scales")) { p.expert_scales = true; continue; }
        bool takes_value = false, done = false;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (!strcmp(a, ints[k].flag)) takes_value = true;
        takes_value |= !strcmp(a, "--type") || !strcmp(a, "--seed") || !strcmp(a, "--rope-base") || !strcmp(a, "--name") || !strcmp(a, "--chat-template") ||
                       !strcmp(a, "--widen") || !strcmp(a, "--widen-mtp") || !strcmp(a, "--mtp-out") || !strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--arch") ||
                       !strcmp(a, "--vocab-from") || !strcmp(a, "--rope-scaling") || !strcmp(a, "--std") ||
                       !strcmp(a, "--softcap") || !strcmp(a, "--swa-layers") || !strcmp(a, "--target") ||
                       !strcmp(a, "--attn-softcap") || !strcmp(a, "--recurrent-layers") || !strcmp(a, "--rope-sections");
        if (!takes_value) {
            fprintf(stderr, "sprig mkmodel: unknown %s '%s'\n", a[0] == '-' ? "option" : "argument", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sprig mkmodel: %s: missing value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !done; k++)
            if (!strcmp(a, ints[k].flag)) {
                long long n;
                if (!cli_parse_int("mkmodel", a, v, ints[k].lo, ints[k].hi, &n)) return 2;
                *ints[k].dst = (int)n;
                done = true;
            }
        if (done) continue;
        if (!strcmp(a, "--type")) {
            const struct sprig_ftype *ft = sprig_ftype_find(v);
            if (!ft) {
                fprintf(stderr, "sprig mkmodel: --type: '%s' is not one of %s\n", v, sprig_ftype_names());
                return 2;
            }
            p.type = ft->type;
            p.ftype = ft->mix ? ft : NULL;
        } else if (!strcmp(a, "--seed")) {
            long long n;
            if (!cli_parse_int("mkmodel", a, v, 0, INT64_MAX, &n)) return 2;
            p.seed = (uint64_t)n;
        } else if (!strcmp(a, "--rope-base")) {
            double x;
            if (!cli_parse_float("mkmodel", a, v, 1.0, 1e12, &x)) return 2;
            p.rope_freq_base = (float)x;
            rope_base_given = true;
        } else if (!strcmp(a, "--name")) {
            if (!*v || strlen(v) > 256) {
                fprintf(stderr, "sprig mkmodel: --name: must be 1..256 bytes\n");
                return 2;
            }
            p.name = v;
        } else if (!strcmp(a, "--chat-template")) {
            p.chat_template = v;
        } else if (!strcmp(a, "--widen")) {
            widen = v;
        } else if (!strcmp(a, "--widen-mtp")) {
            widen_mtp = v;
        } else if (!strcmp(a, "--mtp-out")) {
            mtp_out = v;
        } else if (!strcmp(a, "--softcap")) {
            double x;
            if (!cli_parse_float("mkmodel", a, v, 0.01, 1e5, &x)) return 2;
            p.final_softcap = (float)x;
        } else if (!strcmp(a, "--attn-softcap")) {
            double x;
            if (!cli_parse_float("mkmodel", a, v, 0.01, 1e5, &x)) return 2;
            p.attn_softcap = (float)x;
        } else if (!strcmp(a, "--std")) {
            double x;
            if (!cli_parse_float("mkmodel", a, v, 0.0, 10.0, &x)) return 2;
            p.std = (float)x;
        } else if (!strcmp(a, "--arch")) {
            p.arch = v;
        } else if (!strcmp(a, "--swa-layers")) {
            p.swa_layers = v;
        } else if (!strcmp(a, "--recurrent-layers")) {
            p.recurrent_layers = v;
        } else if (!strcmp(a, "--rope-sections")) {
            int sec[4], n = 0, used = 0;
            if (sscanf(v, "%d,%d,%d,%d%n", &sec[0], &sec[1], &sec[2], &sec[3], &used) != 4 || v[used] != 0)
                n = -1;
            for (int k = 0; n == 0 && k < 4; k++)
                if (sec[k] < 0 || sec[k] > 4096) n = -1;
            if (n < 0) {
                fprintf(stderr, "sprig mkmodel: --rope-sections: '%s' is not four integers in [0, 4096] (A,B,C,D)\n", v);
                return 2;
            }
            memcpy(p.rope_sections, sec, sizeof sec);
        } else if (!strcmp(a, "--target")) {
            p.target = v;
        } else if (!strcmp(a, "--vocab-from")) {
            p.vocab_from = v;
        } else if (!strcmp(a, "--rope-scaling")) {
            if (!strcmp(v, "none")) p.rope_scaling = SPRIG_MKMODEL_ROPE_NONE;
            else if (!strcmp(v, "llama3")) p.rope_scaling = SPRIG_MKMODEL_ROPE_LLAMA3;
            else {
                fprintf(stderr, "sprig mkmodel: --rope-scaling: '%s' is not one of none, llama3\n", v);
                return 2;
            }
        } else {
            out = v;
        }
    }
    if (!out) {
        fprintf(stderr, "sprig mkmodel: missing -o OUT.gguf\n");
        return 2;
    }
    if (pure) p.ftype = NULL;
    if (!assistant && (p.target || p.masked_embd)) {
        fprintf(stderr, "sprig mkmodel: %s: for --arch gemma4-assistant only\n", p.target ? "--target" : "--masked-embd");
        return 2;
    }
    if (assistant && !p.target) {
        fprintf(stderr, "sprig mkmodel: --arch gemma4-assistant needs --target T.gguf (the gemma4 model it drafts for)\n");
        return 2;
    }
    if (assistant) {
        sprig_status st = sprig_mkmodel_target(&p, &err);
        if (st != SPRIG_OK) {
            fprintf(stderr, "sprig mkmodel: --target: %s\n", err.msg);
            return st == SPRIG_E_INVALID_ARG ? 2 : 1;
        }
    }
    if (p.arch && !strcmp(p.arch, "gemma4")) {   /* Gemma 4's published values (no preset carries them) */
        if (!rope_base_given) p.rope_freq_base = 1000000.0f;
        p.rms_eps = 1e-6f;
    }
    if (p.arch && !strncmp(p.arch, "qwen35", 6)) {   /* Qwen 3.5's published values */
        if (!rope_base_given) p.rope_freq_base = 10000000.0f;
        p.rms_eps = 1e-6f;
    }
    double t0 = sprig_time_ms();
    if (widen && ((p.arch && strcmp(p.arch, "llama")) || p.head_dim || p.vocab_from || p.rope_scaling || p.output)) {
        fprintf(stderr, "sprig mkmodel: --widen writes llama's layout only (no --arch, --head-dim, --vocab-from, --rope-scaling, --tied)\n");
        return 2;
    }
    if (p.vocab_from && sprig_mkmodel_vocab_from(p.vocab_from, &p.vocab, &err) != SPRIG_OK) {
        fprintf(stderr, "sprig mkmodel: --vocab-from: %s\n", err.msg);
        return 1;
    }
    if (!widen_mtp != !mtp_out || (widen_mtp && !widen)) {
        fprintf(stderr, "sprig mkmodel: --widen-mtp HEAD and --mtp-out PATH go together, with --widen SRC\n");
        return 2;
    }
    if (widen) {
        if (p.ftype) {
            fprintf(stderr, "sprig mkmodel: --widen writes every matrix in one type; %s is a mix (add --pure)\n", p.ftype->name);
            return 2;
        }
        sprig_status st = sprig_widen_write(widen, &p, out, &err);
        if (st != SPRIG_OK) {
            fprintf(stderr, "sprig mkmodel: --widen %s: %s\n", widen, err.msg);
            return st == SPRIG_E_INVALID_ARG ? 2 : 1;
        }
        if (!quiet)
            fprintf(stderr, "sprig mkmodel: wrote %s: %s widened to dim %d, layers %d, heads %d/%d, ffn %d, %s (%.1f s)\n",
                    out, widen, p.dim, p.n_layers, p.n_heads, p.n_kv_heads, p.ffn, sprig_type_name(p.type),
                    (sprig_time_ms() - t0) / 1000.0);
        if (widen_mtp) {
            if ((st = sprig_widen_mtp_write(widen, widen_mtp, &p, mtp_out, &err)) != SPRIG_OK) {
                fprintf(stderr, "sprig mkmodel: --widen-mtp %s: %s\n", widen_mtp, err.msg);
                return st == SPRIG_E_INVALID_ARG ? 2 : 1;
            }
            if (!quiet) fprintf(stderr, "sprig mkmodel: wrote %s: MTP head %s widened with it\n", mtp_out, widen_mtp);
        }
        return 0;
    }
    if (sprig_mkmodel_validate(&p, &err) != SPRIG_OK) {
        fprintf(stderr, "sprig mkmodel: %s\n", err.msg);
        return 2;
    }
    if (sprig_mkmodel_write(&p, out, &err) != SPRIG_OK) {
        fprintf(stderr, "sprig mkmodel: %s\n", err.msg);
        return 1;
    }
    if (!quiet && assistant) {
        char pat[SPRIG_MKMODEL_MAX_LAYERS + 1];
        for (int l = 0; l < p.n_layers; l++)   /* mkmodel.h's default: all sliding but the last, as the target's last */
            pat[l] = p.swa_layers ? p.swa_layers[l] : (l < p.n_layers - 1 || p.n_layers == 1 || p.tgt.swa_n1) ? 's' : 'g';
        pat[p.n_layers] = 0;
        fprintf(stderr, "sprig mkmodel: wrote %s: gemma4-assistant for %s (dim %d, %d layers), dim %d, layers %d (%s), heads %d, ffn %d, "
                "vocab %d, %s, %" PRId64 " parameters, seed %" PRIu64 " (%.1f s)\n", out, p.target, p.tgt.dim, p.tgt.n_layers, p.dim,
                p.n_layers, pat, p.n_heads, p.ffn, p.vocab, p.ftype ? p.ftype->name : sprig_type_name(p.type),
                sprig_mkmodel_n_params(&p), p.seed, (sprig_time_ms() - t0) / 1000.0);
        return 0;
    }
    if (!quiet && p.arch && !strncmp(p.arch, "qwen35", 6)) {
        char pat[SPRIG_MKMODEL_MAX_LAYERS + 1];
        const int iv = p.full_attn_interval ? p.full_attn_interval : p.n_layers < 4 ? p.n_layers : 4;
        for (int l = 0; l < p.n_layers; l++)   /* mkmodel.h's rule: r linear attention, a full attention */
            pat[l] = p.recurrent_layers ? p.recurrent_layers[l] : (l + 1) % iv ? 'r' : 'a';
        pat[p.n_layers] = 0;
        const int vh = p.ssm_v_heads ? p.ssm_v_heads : p.n_heads;
        fprintf(stderr, "sprig mkmodel: wrote %s: %s, dim %d, layers %d (%s)%s, heads %d/%d, ssm state %d, k/v heads %d/%d, "
                "ffn %d, vocab %d, %s, %" PRId64 " parameters, seed %" PRIu64 " (%.1f s)\n", out, p.arch, p.dim, p.n_layers, pat,
                p.mtp ? " + MTP" : "", p.n_heads, p.n_kv_heads, p.ssm_state ? p.ssm_state : 32, p.ssm_k_heads ? p.ssm_k_heads : vh,
                vh, p.ffn, p.vocab, p.ftype ? p.ftype->name : sprig_type_name(p.type), sprig_mkmodel_n_params(&p), p.seed,
                (sprig_time_ms() - t0) / 1000.0);
        return 0;
    }
    if (!quiet)
        fprintf(stderr, "sprig mkmodel: wrote %s: %s, dim %d, layers %d, heads %d/%d, ffn %d, vocab %d, %s, %" PRId64
                " parameters, seed %" PRIu64 " (%.1f s)\n", out, p.arch ? p.arch : "llama", p.dim, p.n_layers, p.n_heads, p.n_kv_heads,
                p.ffn, p.vocab, p.ftype ? p.ftype->name : sprig_type_name(p.type), sprig_mkmodel_n_params(&p), p.seed,
                (sprig_time_ms() - t0) / 1000.0);
    return 0;
}
