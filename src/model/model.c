/*
 * model/model — loading a model: GGUF -> architecture row -> validated
 * hyper-parameters -> tensors bound by name with their shapes checked ->
 * tokenizer. Everything in the file is hostile until checked; every error
 * names the file and the key or tensor.
 */
#include "grammar/match.h"
#include "model/arch.h"
#include "model/moe.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/mmap.h"
#include "base/timer.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- hparams */

struct hp_key {
    const char *suffix;     /* appended to "<arch>." */
    size_t offset;          /* into struct sprig_hparams (int fields) */
    bool required;
    long lo, hi;
    bool per_layer;         /* may be a per-layer array on a row with layer_shapes (the field
                               then holds the largest entry; read_layer_shapes reads each) */
};

#define HP(sfx, field, req, lo, hi, pl) { sfx, offsetof(struct sprig_hparams, field), req, lo, hi, pl }
static const struct hp_key int_keys[] = {
    HP("embedding_length",        dim,         true,  1, 65536, false),
    HP("block_count",             n_layer,     true,  1, SPRIG_MAX_LAYERS, false),
    HP("feed_forward_length",     n_ff,        true,  1, 1 << 20, true),
    HP("attention.head_count",    n_head,      true,  1, 1024, true),
    HP("attention.head_count_kv", n_kv_head,   false, 1, 1024, true),
    HP("context_length",          n_ctx_train, false, 1, 1 << 24, false),
    HP("rope.dimension_count",    n_rot,       false, 2, 4096, false),
    HP("attention.key_length",    head_dim,    false, 2, 4096, false),
};
#undef HP

/* Entry i of an integer key that may be a per-layer array (else its scalar). */
static int64_t key_at(const sprig_gguf *g, const char *key, int i, int64_t scalar)
{
    const int64_t kv = sprig_gguf_find_kv(g, key);
    if (kv < 0 || sprig_gguf_kv_type(g, kv) != SPRIG_GGUF_ARR) return scalar;
    return sprig_gguf_arr_int(g, kv, (uint64_t)i);
}

/* <arch>.rope.scaling.type, a row each: what llama.cpp does with it. An
 * absent key reads as "linear" (llama.cpp's default), which with no factor
 * is no scaling. YaRN, LongRoPE and anything else are refused by name. */
static const struct { const char *name; bool uses_factor; } rope_scalings[] = {
    { "none", false },
    { "linear", true },
};

static sprig_status read_rope_scaling(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp, sprig_error *err)
{
    const char *path = sprig_gguf_path(g);
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", a->name);
    const char *ty = "linear";
    size_t ty_len = 6;
    sprig_status st;
    if (sprig_gguf_find_kv(g, key) >= 0 && (st = sprig_gguf_get_str(g, key, &ty, &ty_len, true, err))) return st;
    int row = -1;
    for (size_t i = 0; i < sizeof rope_scalings / sizeof rope_scalings[0]; i++)
        if (strlen(rope_scalings[i].name) == ty_len && !memcmp(rope_scalings[i].name, ty, ty_len)) row = (int)i;
    if (row < 0)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' = '%.*s' is not supported (sprig runs: none, linear, and Llama 3 "
                         "scaling through the rope_freqs tensor)", path, key, (int)(ty_len > 32 ? 32 : ty_len), ty);
    float factor = 0;
    snprintf(key, sizeof key, "%s.rope.scaling.factor", a->name);
    if (sprig_gguf_find_kv(g, key) < 0) snprintf(key, sizeof key, "%s.rope.scale_linear", a->name);
    if ((st = sprig_gguf_get_f32(g, key, &factor, false, err))) return st;
    if (!(factor >= 0 && factor < 1e6f))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range [0, 1e6)", path, key, (double)factor);
    hp->rope_freq_scale = rope_scalings[row].uses_factor && factor != 0 ? 1.0f / factor : 1.0f;
    if (!(hp->rope_freq_scale > 0 && hp->rope_freq_scale < 1e30f))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range", path, key, (double)factor);
    return SPRIG_OK;
}

static sprig_status read_hparams(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp, sprig_error *err)
{
    const char *path = sprig_gguf_path(g);
    char key[128];
    memset(hp, 0, sizeof *hp);
    hp->n_ctx_train = 2048;
    hp->eps = 1e-5f;
    hp->rope_theta = 10000.0f;
    hp->rope_mode = a->rope_mode;
    hp->n_kv_head = -1;
    hp->n_rot = -1;
    hp->head_dim = -1;
    hp->rope_freq_scale = 1.0f;
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
        const struct hp_key *k = &int_keys[i];
        snprintf(key, sizeof key, "%s.%s", a->name, k->suffix);
        int64_t kv = sprig_gguf_find_kv(g, key);
        int64_t v = -1;
        if (kv >= 0 && sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR) {
            if (!k->per_layer || !a->layer_shapes)
                return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' is a per-layer array; sprig needs one value for all "
                                 "layers of architecture '%s'", path, key, a->name);
            int et;
            uint64_t n;
            sprig_status st = sprig_gguf_get_arr(g, key, &et, &n, true, err);
            if (st) return st;
            if (et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR || et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64 || n < 1 ||
                n > SPRIG_MAX_LAYERS)
                return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be an integer or an array of 1..%d integers", path, key,
                                 SPRIG_MAX_LAYERS);
            for (uint64_t j = 0; j < n; j++) {   /* each entry in range; the largest sizes the scratch */
                const int64_t e = sprig_gguf_arr_int(g, kv, j);
                if (e < k->lo || e > k->hi)
                    return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%llu] = %lld is out of range [%ld, %ld]", path, key,
                                     (unsigned long long)j, (long long)e, k->lo, k->hi);
                if (e > v) v = e;
            }
        } else {
            sprig_status st = sprig_gguf_get_i64(g, key, &v, k->required, err);
            if (st) return st;
        }
        if (kv < 0) continue;
        if (v < k->lo || v > k->hi)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [%ld, %ld]", path, key, (long long)v, k->lo, k->hi);
        *(int *)((char *)hp + k->offset) = (int)v;
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a->name);
    sprig_status st = sprig_gguf_get_f32(g, key, &hp->eps, true, err);
    if (st) return st;
    if (!(hp->eps > 0 && hp->eps < 1))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range (0, 1)", path, key, (double)hp->eps);
    snprintf(key, sizeof key, "%s.rope.freq_base", a->name);
    if ((st = sprig_gguf_get_f32(g, key, &hp->rope_theta, false, err))) return st;
    if (!(hp->rope_theta > 1 && hp->rope_theta < 1e12f))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range (1, 1e12)", path, key, (double)hp->rope_theta);

    if ((st = read_rope_scaling(g, a, hp, err))) return st;

    /* what the forward does not do (for this row) is refused by name, never run wrongly */
    static const struct { const char *key; const char *what; } unsupported[] = {
        { "attention.sliding_window", "sliding-window layers" },
        { "final_logit_softcapping", "final logit soft-capping" },
        { "attn_logit_softcapping", "attention logit soft-capping" },
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        if ((i == 0 && a->swa.period) || (i == 1 && a->softcap.final_reads) || (i == 2 && a->softcap.attn_reads))
            continue;   /* the row reads it */
        snprintf(key, sizeof key, "%s.%s", a->name, unsupported[i].key);
        const int64_t kv = sprig_gguf_find_kv(g, key);
        if (kv < 0) continue;
        double v = 0;
        if (sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR) v = 1;
        else {
            float f = 0;
            int64_t iv = 0;
            if (sprig_gguf_get_f32(g, key, &f, false, NULL) == SPRIG_OK) v = f;
            else if (sprig_gguf_get_i64(g, key, &iv, false, NULL) == SPRIG_OK) v = (double)iv;
            else v = 1;
        }
        if (v != 0)
            return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' is set: sprig does not run %s for architecture '%s'", path, key,
                             unsupported[i].what, a->name);
    }
    /* soft-caps: the row's default, else the key's (llama.cpp: gemma2 always caps, 30 / 50 unless
     * the file says otherwise; gemma3 and gemma4 cap the logits only when the key is present) */
    hp->final_softcap = a->softcap.final_default;
    hp->attn_softcap = a->softcap.attn_default;
    const struct { bool reads; const char *sfx; float *field; } caps[] = {
        { a->softcap.final_reads, "final_logit_softcapping", &hp->final_softcap },
        { a->softcap.attn_reads, "attn_logit_softcapping", &hp->attn_softcap },
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->name, caps[i].sfx);
        if (!caps[i].reads || sprig_gguf_find_kv(g, key) < 0) continue;
        if ((st = sprig_gguf_get_f32(g, key, caps[i].field, true, err))) return st;
        if (!(*caps[i].field > 0 && *caps[i].field < 1e6f))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g must be a positive soft-cap below 1e6", path, key,
                             (double)*caps[i].field);
    }

    /* mixture-of-experts keys: read by a row with experts, refused by name by the others (model/moe.h) */
    if ((st = sprig_moe_read_hparams(g, a, hp, err))) return st;
    if (a->nextn_tensors) {   /* MTP blocks after the last layer: block_count counts them (llama.cpp's n_layer_all) */
        snprintf(key, sizeof key, "%s.nextn_predict_layers", a->name);
        int64_t nx = 0;
        if ((st = sprig_gguf_get_i64(g, key, &nx, false, err))) return st;
        if (nx < 0 || nx > 8 || nx >= hp->n_layer)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld must be in [0, min(8, block_count - 1 = %d)]", path, key,
                             (long long)nx, hp->n_layer - 1);
        hp->n_nextn = (int)nx;
        hp->n_layer -= (int)nx;
    }
    if (hp->n_kv_head < 0) hp->n_kv_head = hp->n_head;
    if (hp->head_dim < 0 && hp->dim % hp->n_head)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: embedding_length %d is not a multiple of head_count %d (and no %s.attention.key_length)",
                         path, hp->dim, hp->n_head, a->name);
    if (!a->layer_shapes && hp->n_head % hp->n_kv_head)   /* per layer: read_layer_shapes */
        return sprig_err(err, SPRIG_E_FORMAT, "%s: head_count %d is not a multiple of head_count_kv %d", path, hp->n_head, hp->n_kv_head);
    if (hp->head_dim < 0) hp->head_dim = hp->dim / hp->n_head;
    /* value heads: sprig's cache and attention use one head size for k and v */
    snprintf(key, sizeof key, "%s.attention.value_length", a->name);
    int64_t vlen = -1;
    if ((st = sprig_gguf_get_i64(g, key, &vlen, false, err))) return st;
    if (sprig_gguf_find_kv(g, key) >= 0 && vlen != hp->head_dim)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' = %lld differs from the key head size %d; sprig needs equal k and v heads",
                         path, key, (long long)vlen, hp->head_dim);
    if (hp->head_dim % 2)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: head dimension %d is odd; RoPE needs pairs", path, hp->head_dim);
    if (hp->head_dim > SPRIG_ATTN_MAX_HD)   /* else the forward's attention would refuse it on every call */
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: head dimension %d (%s.attention.key_length, else embedding_length / "
                         "head_count) is larger than the %d sprig's attention takes", path, hp->head_dim, a->name, SPRIG_ATTN_MAX_HD);
    if (hp->n_rot < 0) hp->n_rot = hp->head_dim;
    if (hp->n_rot % 2 || hp->n_rot > hp->head_dim)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %s.rope.dimension_count = %d must be even and at most the head dimension %d",
                         path, a->name, hp->n_rot, hp->head_dim);
    hp->attn_scale = a->swa.attn_scale_dim_layers && hp->n_layer == a->swa.attn_scale_dim_layers
                         ? 1.0f / sqrtf((float)(hp->dim / hp->n_head)) : 1.0f / sqrtf((float)hp->head_dim);
    hp->head_dim_swa = hp->head_dim;
    hp->n_rot_swa = hp->n_rot;
    hp->n_kv_start = hp->n_layer;
    if (!a->layer_shapes) return SPRIG_OK;
    hp->attn_scale = 1.0f;   /* gemma4: the q/k norms carry the scale */
    int shared = 0;   /* the last `shared` layers read an earlier layer's cache */
    const struct { const char *sfx; int *field; long lo, hi; } g4[] = {
        { "attention.key_length_swa", &hp->head_dim_swa, 2, SPRIG_ATTN_MAX_HD },
        { "rope.dimension_count_swa", &hp->n_rot_swa, 2, SPRIG_ATTN_MAX_HD },
        { "attention.shared_kv_layers", &shared, 0, hp->n_layer - 2 },
        { "embedding_length_per_layer_input", &hp->n_pl, 0, 65536 },
    };
    const int rot_default = -1;
    hp->n_rot_swa = rot_default;
    for (size_t i = 0; i < sizeof g4 / sizeof g4[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->name, g4[i].sfx);
        if (sprig_gguf_find_kv(g, key) < 0) continue;
        int64_t v = 0;
        if ((st = sprig_gguf_get_i64(g, key, &v, true, err))) return st;
        if (v < g4[i].lo || v > g4[i].hi)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [%ld, %ld]", path, key, (long long)v,
                             g4[i].lo, g4[i].hi);
        *g4[i].field = (int)v;
    }
    if (hp->n_rot_swa == rot_default) hp->n_rot_swa = hp->head_dim_swa;
    hp->n_kv_start = hp->n_layer - shared;
    snprintf(key, sizeof key, "%s.attention.value_length_swa", a->name);
    if (sprig_gguf_find_kv(g, key) >= 0) {
        if ((st = sprig_gguf_get_i64(g, key, &vlen, true, err))) return st;
        if (vlen != hp->head_dim_swa)
            return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: key '%s' = %lld differs from the sliding layers' key head size %d",
                             path, key, (long long)vlen, hp->head_dim_swa);
    }
    if (hp->head_dim_swa % 2 || hp->n_rot_swa % 2 || hp->n_rot_swa > hp->head_dim_swa)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %s.attention.key_length_swa %d and rope.dimension_count_swa %d must be even, "
                         "the rotated part at most the head", path, a->name, hp->head_dim_swa, hp->n_rot_swa);
    return SPRIG_OK;
}

/* qwen35's gated delta-net layers: the ssm.* sizes, which layers are
 * recurrent (attention.recurrent_layers, else every full_attention_interval-th
 * layer is attention, default 4: llama.cpp's rule), the RoPE sections.
 * Needs the layers; runs after read_layer_shapes. */
static sprig_status read_hybrid(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp,
                                struct sprig_layer *layers, sprig_error *err)
{
    if (!a->hybrid) return SPRIG_OK;
    const char *path = sprig_gguf_path(g);
    char key[128];
    sprig_status st;
    const struct { const char *sfx; int *field; long lo, hi; } keys[] = {
        { "ssm.conv_kernel", &hp->ssm_conv, 1, hp->n_ctx_train },
        { "ssm.state_size", &hp->ssm_state, 1, 512 },
        { "ssm.time_step_rank", &hp->ssm_v_heads, 1, 4096 },
        { "ssm.group_count", &hp->ssm_k_heads, 1, 4096 },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", a->name, keys[i].sfx);
        int64_t v = 0;
        if ((st = sprig_gguf_get_i64(g, key, &v, true, err))) return st;
        if (v < keys[i].lo || v > keys[i].hi)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [%ld, %ld]%s", path, key, (long long)v,
                             keys[i].lo, keys[i].hi, i == 0 ? " (the convolution's taps must fit the context)" : "");
        *keys[i].field = (int)v;
    }
    snprintf(key, sizeof key, "%s.ssm.inner_size", a->name);
    int64_t inner = 0;
    if ((st = sprig_gguf_get_i64(g, key, &inner, true, err))) return st;
    if (inner != (int64_t)hp->ssm_v_heads * hp->ssm_state)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is not %s.ssm.time_step_rank %d x ssm.state_size %d (the state "
                         "size must divide it)", path, key, (long long)inner, a->name, hp->ssm_v_heads, hp->ssm_state);
    if (hp->ssm_v_heads % hp->ssm_k_heads)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: %s.ssm.time_step_rank %d (value heads) is not a multiple of ssm.group_count %d",
                         path, a->name, hp->ssm_v_heads, hp->ssm_k_heads);
    snprintf(key, sizeof key, "%s.rope.dimension_sections", a->name);
    int et = 0;
    uint64_t ns = 0;
    if ((st = sprig_gguf_get_arr(g, key, &et, &ns, true, err))) return st;
    if (ns != 4 || et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR || et == SPRIG_GGUF_F32 || et == SPRIG_GGUF_F64)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be 4 integers", path, key);
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        const int64_t v = sprig_gguf_arr_int(g, sprig_gguf_find_kv(g, key), (uint64_t)i);
        if (v < 0 || v > hp->head_dim) return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is out of range", path, key, i, (long long)v);
        hp->rope_sections[i] = (int)v;
        sum += v;
    }
    if (sum < 1 || sum > hp->head_dim || hp->rope_sections[0] + hp->rope_sections[1] + hp->rope_sections[2] == 0)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' sums to %lld: it must be in [1, head size %d] with a t, h or w section",
                         path, key, (long long)sum, hp->head_dim);
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", a->name);
    const int64_t rk = sprig_gguf_find_kv(g, key);
    if (rk >= 0) {
        uint64_t n = 0;
        if (sprig_gguf_kv_type(g, rk) != SPRIG_GGUF_ARR || sprig_gguf_get_arr(g, key, &et, &n, true, NULL) ||
            et == SPRIG_GGUF_STR || et == SPRIG_GGUF_ARR)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be an array of booleans (one per layer)", path, key);
        if (n != (uint64_t)(hp->n_layer + hp->n_nextn))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu entries; %s.block_count is %d", path, key,
                             (unsigned long long)n, a->name, hp->n_layer + hp->n_nextn);
        for (int l = 0; l < hp->n_layer + hp->n_nextn; l++) {
            const int64_t f = sprig_gguf_arr_int(g, rk, (uint64_t)l);
            if (f != 0 && f != 1) return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is not 0 or 1", path, key, l, (long long)f);
            if (l >= hp->n_layer && f)
                return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] marks an MTP block recurrent", path, key, l);
            if (l < hp->n_layer) layers[l].recurrent = f;
        }
    } else {
        snprintf(key, sizeof key, "%s.full_attention_interval", a->name);
        int64_t every = 4;
        if ((st = sprig_gguf_get_i64(g, key, &every, false, err))) return st;
        if (every < 1 || every > SPRIG_MAX_LAYERS)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld must be in [1, %d]", path, key, (long long)every, SPRIG_MAX_LAYERS);
        for (int l = 0; l < hp->n_layer; l++) layers[l].recurrent = (l + 1) % every != 0;
    }
    hp->n_recurrent = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        struct sprig_layer *L = &layers[l];
        L->attn_gate = true;
        if (L->recurrent) { L->kv_layer = -1; hp->n_recurrent++; }
    }
    return SPRIG_OK;
}

/* Every layer's shape (per-layer arrays on rows with layer_shapes: head
 * counts and FFN sizes; the sliding layers' head size) and which cache it
 * reads (gemma4's last shared_kv_layers layers read layer n_kv_start - 2
 * when sliding, n_kv_start - 1 when global: llama.cpp's rule, checked to
 * be a layer of the same kind and shape). Needs the windows (read_swa). */
static sprig_status read_layer_shapes(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp,
                                      struct sprig_layer *layers, sprig_error *err)
{
    const char *path = sprig_gguf_path(g);
    char kh[128], kkv[128], kff[128];
    snprintf(kh, sizeof kh, "%s.attention.head_count", a->name);
    snprintf(kkv, sizeof kkv, "%s.attention.head_count_kv", a->name);
    snprintf(kff, sizeof kff, "%s.feed_forward_length", a->name);
    const char *keys[3] = { kh, kkv, kff };
    for (int i = 0; i < 3; i++) {   /* a per-layer array has one entry per layer (llama.cpp: "wrong array length") */
        const int64_t kv = sprig_gguf_find_kv(g, keys[i]);
        int et;
        uint64_t n;
        if (kv >= 0 && sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR && sprig_gguf_get_arr(g, keys[i], &et, &n, true, NULL) == SPRIG_OK &&
            n != (uint64_t)hp->n_layer)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu entries; %s.block_count is %d", path, keys[i],
                             (unsigned long long)n, a->name, hp->n_layer);
    }
    hp->max_qdim = hp->max_kvdim = hp->max_hd = hp->max_rot = hp->max_ff = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        struct sprig_layer *L = &layers[l];
        const bool swa = L->window > 0;
        L->n_head = (int)key_at(g, kh, l, hp->n_head);
        L->n_kv_head = (int)key_at(g, kkv, l, hp->n_kv_head);
        L->n_ff = (int)key_at(g, kff, l, hp->n_ff);
        L->head_dim = swa ? hp->head_dim_swa : hp->head_dim;
        L->n_rot = swa ? hp->n_rot_swa : hp->n_rot;
        if (L->n_head % L->n_kv_head)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: layer %d: head_count %d is not a multiple of head_count_kv %d (%s, %s)", path,
                             l, L->n_head, L->n_kv_head, kh, kkv);
        L->kv_layer = l < hp->n_kv_start ? l : hp->n_kv_start - (swa ? 2 : 1);
        const struct sprig_layer *S = &layers[L->kv_layer];
        if (L->kv_layer != l && (L->kv_layer < 0 || (S->window > 0) != swa || S->n_kv_head != L->n_kv_head || S->head_dim != L->head_dim))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: layer %d would read layer %d's cache (%s.attention.shared_kv_layers = %d), "
                             "which is not a %s layer of the same shape", path, l, L->kv_layer, a->name, hp->n_layer - hp->n_kv_start,
                             swa ? "sliding" : "global");
#define MAXF(f, v) if ((v) > hp->f) hp->f = (v)
        MAXF(max_qdim, L->n_head * L->head_dim);
        MAXF(max_kvdim, L->n_kv_head * L->head_dim);
        MAXF(max_hd, L->head_dim);
        MAXF(max_rot, L->n_rot);
        MAXF(max_ff, L->n_ff);
        MAXF(max_ff, hp->n_ff_exp);
        MAXF(max_ff, hp->n_ff_shexp);
#undef MAXF
    }
    return SPRIG_OK;
}

/* Sliding-window layers (struct sprig_swa_rule): the window, which layers
 * slide (a period or a per-layer array), and their RoPE. Needs the layers. */
static sprig_status read_swa(const sprig_gguf *g, const struct sprig_arch *a, struct sprig_hparams *hp,
                             struct sprig_layer *layers, sprig_error *err)
{
    const char *path = sprig_gguf_path(g);
    char key[128];
    sprig_status st;
    hp->rope_theta_swa = a->swa.own_rope ? 10000.0f : hp->rope_theta;
    hp->rope_freq_scale_swa = a->swa.own_rope ? 1.0f : hp->rope_freq_scale;
    if (!a->swa.period) return SPRIG_OK;
    snprintf(key, sizeof key, "%s.attention.sliding_window", a->name);
    int64_t w = 0;
    if ((st = sprig_gguf_get_i64(g, key, &w, false, err))) return st;
    if (w == 0 && sprig_gguf_find_kv(g, key) < 0)   /* gemma2: 4096 without the key (past the context: never binds) */
        w = a->swa.window < hp->n_ctx_train ? a->swa.window : hp->n_ctx_train;
    if (w == 0 && a->swa.period < 0)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' is missing (architecture '%s' requires it)", path, key, a->name);
    if (w == 0) return SPRIG_OK;   /* absent or 0: every layer full (llama.cpp: no SWA) */
    if (w < 1 || w > hp->n_ctx_train || w > (1 << 24))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld must be in [1, %s.context_length = %d]: a window larger "
                         "than the context", path, key, (long long)w, a->name, hp->n_ctx_train);
    hp->swa_window = (int)w;
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a->name);
    const int64_t kv = sprig_gguf_find_kv(g, key);
    if (kv >= 0 && sprig_gguf_kv_type(g, kv) == SPRIG_GGUF_ARR) {   /* one flag per layer */
        int et;
        uint64_t n;
        if ((st = sprig_gguf_get_arr(g, key, &et, &n, true, err))) return st;
        if (n != (uint64_t)hp->n_layer)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' has %llu entries; %s.block_count is %d (one per layer)", path, key,
                             (unsigned long long)n, a->name, hp->n_layer);
        if (et != SPRIG_GGUF_BOOL && et != SPRIG_GGUF_U8 && et != SPRIG_GGUF_I8 && et != SPRIG_GGUF_U32 && et != SPRIG_GGUF_I32)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' is an array of %s; expected booleans", path, key, sprig_gguf_vtype_name(et));
        for (int l = 0; l < hp->n_layer; l++) {
            const int64_t f = sprig_gguf_arr_int(g, kv, (uint64_t)l);
            if (f != 0 && f != 1)
                return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s'[%d] = %lld is not 0 or 1", path, key, l, (long long)f);
            layers[l].window = f ? hp->swa_window : 0;
        }
    } else if (a->swa.period < 0) {
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' must be a per-layer array of booleans for architecture '%s'", path, key,
                         a->name);
    } else {
        int64_t period = a->swa.period;
        if ((st = sprig_gguf_get_i64(g, key, &period, false, err))) return st;
        if (period < 0 || period > SPRIG_MAX_LAYERS)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %lld is out of range [0, %d]", path, key, (long long)period,
                             SPRIG_MAX_LAYERS);
        for (int l = 0; l < hp->n_layer; l++)   /* llama.cpp's set_swa_pattern */
            layers[l].window = period == 0 || l % period < period - 1 ? hp->swa_window : 0;
    }
    snprintf(key, sizeof key, "%s.rope.freq_base_swa", a->name);
    if ((st = sprig_gguf_get_f32(g, key, &hp->rope_theta_swa, false, err))) return st;
    if (!(hp->rope_theta_swa > 1 && hp->rope_theta_swa < 1e12f))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: key '%s' = %g is out of range (1, 1e12)", path, key, (double)hp->rope_theta_swa);
    return SPRIG_OK;
}

/* ---------------------------------------------------------------- tensors */

/* A symbolic size for a global tensor (L NULL) or layer L's tensor. */
static int64_t dim_value(const struct sprig_hparams *hp, const struct sprig_layer *L, enum sprig_dim d)
{
    switch (d) {   /* twenty symbolic sizes; a table would need the hparams anyway */
    case SPRIG_D_DIM:   return hp->dim;
    case SPRIG_D_QDIM:  return L ? (int64_t)L->n_head * L->head_dim : (int64_t)hp->n_head * hp->head_dim;
    case SPRIG_D_KVDIM: return L ? (int64_t)L->n_kv_head * L->head_dim : (int64_t)hp->n_kv_head * hp->head_dim;
    case SPRIG_D_FF:    return L ? L->n_ff : hp->n_ff;
    case SPRIG_D_VOCAB: return hp->n_vocab;
    case SPRIG_D_HEAD:  return L ? L->head_dim : hp->head_dim;
    case SPRIG_D_ROT_HALF: return hp->n_rot / 2;
    case SPRIG_D_ONE:   return 1;
    case SPRIG_D_PL:    return hp->n_pl;
    case SPRIG_D_PL_ALL: return (int64_t)hp->n_pl * hp->n_layer;
    case SPRIG_D_QGDIM: return 2 * (L ? (int64_t)L->n_head * L->head_dim : (int64_t)hp->n_head * hp->head_dim);
    case SPRIG_D_DIM2:  return 2 * (int64_t)hp->dim;
    case SPRIG_D_SSM_CONV: return (int64_t)(2 * hp->ssm_k_heads + hp->ssm_v_heads) * hp->ssm_state;
    case SPRIG_D_SSM_V: return (int64_t)hp->ssm_v_heads * hp->ssm_state;
    case SPRIG_D_SSM_VH: return hp->ssm_v_heads;
    case SPRIG_D_SSM_S: return hp->ssm_state;
    case SPRIG_D_SSM_K: return hp->ssm_conv;
    case SPRIG_D_FF_EXP: return hp->n_ff_exp;
    case SPRIG_D_EXPERTS: return hp->n_expert;
    case SPRIG_D_FF_EXP2: return 2 * (int64_t)hp->n_ff_exp;
    case SPRIG_D_FF_SHEXP: return hp->n_ff_shexp;
    case SPRIG_D_NONE:  return 1;
    }
    return -1;
}

/* Tables only looked up by row (embeddings): bound as views, never packed. */
static bool is_lookup_table(const char *name)
{
    return !strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight") || strstr(name, ".nextn.embed_tokens.");
}

/* An expert tensor [e0, e1, n_expert]: one weight per expert over its
 * slice of the file (views; each packed for the kernels as any matrix). */
_Static_assert(offsetof(struct sprig_layer, exp_up) == offsetof(struct sprig_layer, exp_gate) + sizeof(sprig_weight *),
               "a fused ffn_gate_up_exps binds exp_gate and the field after it");

static sprig_status bind_experts(sprig_model *m, const sprig_gguf_tensor *t, const char *name, int64_t e0, int64_t e1,
                                 sprig_weight **dst, bool fused, sprig_error *err)
{
    const char *path = sprig_gguf_path(m->gguf);
    const int E = m->hp.n_expert;
    if (t->n_dims != 3 || t->ne[0] != e0 || t->ne[1] != e1 || t->ne[2] != E || t->ne[3] != 1)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %d] "
                         "(%s.expert_count = %d)", path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                         (long long)t->ne[3], (long long)e0, (long long)e1, E, m->arch->name, E);
    const struct sprig_type_traits *tt = sprig_type_traits(t->type);
    if (!tt || !tt->can_compute)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which sprig cannot compute (%s)",
                         path, name, sprig_type_name(t->type), sprig_type_readable_names());
    size_t rb;
    if (!sprig_row_bytes(t->type, e0, &rb)) return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s': bad row size", path, name);
    if (dst[0] || (fused && dst[1]))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s' and the split ffn_gate_exps / ffn_up_exps are both present", path, name);
    /* a fused tensor: each slice's first half of the rows is the gate, the second the up projection */
    const int parts = fused ? 2 : 1;
    const int64_t rows = e1 / parts;
    for (int p = 0; p < parts; p++) {
        sprig_weight *w = calloc((size_t)E, sizeof *w);
        if (!w) return sprig_err(err, SPRIG_E_NOMEM, "%s: tensor '%s': out of memory", path, name);
        dst[p] = w;   /* freed with the model, also after a failure below */
        for (int e = 0; e < E; e++) {
            char en[160];
            snprintf(en, sizeof en, "%s (expert %d%s)", name, e, fused ? (p ? ", up" : ", gate") : "");
            const char *raw = (const char *)t->data + ((size_t)e * (size_t)e1 + (size_t)p * (size_t)rows) * rb;
            /* in place where the kernels read the type's rows (a token touches K of E experts) */
            sprig_status st = sprig_weight_init_mapped(&w[e], en, t->type, raw, e0, rows, err);
            if (st) {
                sprig_err_prefix(err, "%s", path);
                return st;
            }
        }
    }
    if (dst[0][0].packed) {
        m->copied_bytes += t->nbytes;
        sprig_map_drop(t->data, t->nbytes);
    } else {
        m->mapped_bytes += t->nbytes;
    }
    m->n_params += e0 * e1 * E;
    /* a decode step reads K of the E experts */
    m->weight_bytes += t->nbytes / (size_t)E * (size_t)m->hp.n_expert_used;
    return SPRIG_OK;
}

/* Bind one tensor (name with layer index `layer`) into base; shape: the
 * layer whose sizes resolve the symbolic dims (NULL: the model's). */
static sprig_status bind_tensor(sprig_model *m, const struct sprig_tensor_spec *s, int layer, void *base,
                                const struct sprig_layer *shape, bool *used, sprig_error *err)
{
    const char *path = sprig_gguf_path(m->gguf);
    char name[128];
    if (s->per_layer) snprintf(name, sizeof name, s->name, layer);
    else snprintf(name, sizeof name, "%s", s->name);
    const sprig_gguf_tensor *t = sprig_gguf_find_tensor(m->gguf, name);
    if (!t) {
        if (s->required) return sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor '%s'", path, name);
        return SPRIG_OK;
    }
    used[t - sprig_gguf_tensor_at(m->gguf, 0)] = true;
    const struct sprig_layer *L = shape;
    int64_t e0 = dim_value(&m->hp, L, s->ne0), e1 = dim_value(&m->hp, L, s->ne1);
    if (s->bind == SPRIG_BIND_EXPERTS || s->bind == SPRIG_BIND_EXPERTS_GU)
        return bind_experts(m, t, name, e0, e1, (sprig_weight **)((char *)base + s->offset), s->bind == SPRIG_BIND_EXPERTS_GU, err);
    int want_dims = s->ne1 == SPRIG_D_NONE ? 1 : 2;
    bool ok = t->ne[0] == e0 && t->ne[1] == e1 && t->ne[2] == 1 && t->ne[3] == 1;
    if (!ok || (t->n_dims != want_dims && !(t->n_dims == 2 && want_dims == 1 && t->ne[1] == 1))) {
        if (want_dims == 1)
            return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld]", path, name,
                             (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)e0);
        return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", path, name,
                         (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)e0, (long long)e1);
    }
    const struct sprig_type_traits *tt = sprig_type_traits(t->type);
    if (!tt || !tt->can_compute)
        return sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which sprig cannot compute (%s)",
                         path, name, sprig_type_name(t->type), sprig_type_readable_names());
    m->n_params += e0 * e1;
    void *dst = (char *)base + s->offset;
    if (s->bind == SPRIG_BIND_NORM) {   /* a vector, or a small table (ssm_conv1d: ne1 rows of ne0) */
        float *v = malloc((size_t)(e0 * e1) * sizeof(float));
        if (!v) return sprig_err(err, SPRIG_E_NOMEM, "%s: tensor '%s': out of memory", path, name);
        tt->to_f32(t->data, v, e0 * e1);
        *(float **)dst = v;
        return SPRIG_OK;
    }
    sprig_weight *w = dst;
    if (is_lookup_table(name)) {
        /* Only rows are looked up: keep the view, no packed copy. */
        memset(w, 0, sizeof *w);
        w->type = t->type;
        w->n_in = e0;
        w->n_out = e1;
        w->raw = t->data;
        if (!sprig_row_bytes(t->type, e0, &w->row_bytes))
            return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor '%s': bad row size", path, name);
        m->mapped_bytes += t->nbytes;
        return SPRIG_OK;
    }
    sprig_status st = sprig_weight_init(w, name, t->type, t->data, e0, e1, err);
    if (st) {   /* the matmul layer names the weight; the file is named here */
        sprig_err_prefix(err, "%s", path);
        return st;
    }
    if (w->packed) {   /* the copy is what the kernels read: the file's pages leave the resident set */
        m->copied_bytes += t->nbytes;
        sprig_map_drop(t->data, t->nbytes);
    }
    m->weight_bytes += t->nbytes;
    return SPRIG_OK;
}

/* A layer's experts: the router, the expert arrays, the shared expert */
static void free_experts(struct sprig_layer *L, int n_expert)
{
    sprig_weight_free(&L->router);
    float *const v[] = { L->exp_gate_s, L->exp_up_s, L->exp_down_s, L->router_s, L->ffn_pre_norm2, L->ffn_post_norm1, L->ffn_post_norm2 };
    for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) free(v[j]);
    free(L->sh_gate_inp);
    free(L->exp_touched);
    sprig_weight_free(&L->sh_gate);
    sprig_weight_free(&L->sh_up);
    sprig_weight_free(&L->sh_down);
    sprig_weight *const ex[] = { L->exp_gate, L->exp_up, L->exp_down };
    for (size_t j = 0; j < sizeof ex / sizeof ex[0]; j++) {
        for (int e = 0; ex[j] && e < n_expert; e++) sprig_weight_free(&ex[j][e]);
        free(ex[j]);
    }
}

/* A layer of a row with experts has them whole: the gate and up projections
 * split or fused, and the shared expert where the row has one (its tensors
 * are optional in the table only because of the two forms). */
static sprig_status check_experts(const sprig_model *m, struct sprig_layer *L, int l, sprig_error *err)
{
    const char *path = sprig_gguf_path(m->gguf);
    if (!(L->exp_touched = calloc(((size_t)m->hp.n_expert + 63) / 64, sizeof(uint64_t))))
        return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    if (!L->exp_gate || !L->exp_up)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor 'blk.%d.ffn_gate_exps.weight' and 'blk.%d.ffn_up_exps.weight' "
                         "(or the fused 'blk.%d.ffn_gate_up_exps.weight')", path, l, l, l);
    char fused[64];   /* llama.cpp loads the gate's and up's scales only beside split tensors */
    snprintf(fused, sizeof fused, "blk.%d.ffn_gate_up_exps.weight", l);
    if ((L->exp_gate_s || L->exp_up_s) && sprig_gguf_find_tensor(m->gguf, fused))
        return sprig_err(err, SPRIG_E_FORMAT, "%s: tensor 'blk.%d.ffn_%s_exps.scale' scales a split projection, but layer %d's "
                         "gate and up are fused in '%s' (llama.cpp does not load it there)", path, l,
                         L->exp_gate_s ? "gate" : "up", l, fused);
    if (m->arch->moe_shared && !L->sh_gate_inp)
        return sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor 'blk.%d.ffn_gate_inp_shexp.weight' (the shared expert's gate)", path, l);
    if (m->arch->moe_optional) {   /* gemma4: the router's input scale and the norms of the two branches */
        static const struct { const char *name; size_t off; } need[] = {
            { "ffn_gate_inp.scale", offsetof(struct sprig_layer, router_s) },
            { "pre_ffw_norm_2.weight", offsetof(struct sprig_layer, ffn_pre_norm2) },
            { "post_ffw_norm_1.weight", offsetof(struct sprig_layer, ffn_post_norm1) },
            { "post_ffw_norm_2.weight", offsetof(struct sprig_layer, ffn_post_norm2) },
            { "ffn_down_exps.weight", offsetof(struct sprig_layer, exp_down) },
        };
        for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
            if (!*(void *const *)((const char *)L + need[i].off))
                return sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor 'blk.%d.%s' (layer %d has experts: ffn_gate_inp)", path, l,
                                 need[i].name, l);
    }
    return SPRIG_OK;
}

void sprig_model_experts_touched(const sprig_model *m, int64_t *touched, int64_t *total, double *bytes)
{
    *touched = *total = 0;
    *bytes = 0;
    for (int l = 0; l < m->hp.n_layer + m->n_nextn; l++) {
        const struct sprig_layer *L = l < m->hp.n_layer ? &m->layers[l] : &m->nextn[l - m->hp.n_layer].blk;
        if (!L->exp_touched) continue;
        *total += m->hp.n_expert;
        for (int e = 0; e < m->hp.n_expert; e++)
            if (__atomic_load_n(&L->exp_touched[e >> 6], __ATOMIC_RELAXED) >> (e & 63) & 1) {
                ++*touched;
                *bytes += (double)sprig_moe_expert_bytes(L, e);
            }
    }
}

void sprig_model_free(sprig_model *m)
{
    if (!m) return;
    sprig_gvocab_free(m->gvocab);
    if (m->layers) {
        for (int l = 0; l < m->hp.n_layer; l++) {
            struct sprig_layer *L = &m->layers[l];
            free(L->attn_norm);
            free(L->ffn_norm);
            free(L->attn_post_norm);
            free(L->ffn_post_norm);
            free(L->bq);
            free(L->bk);
            free(L->bv);
            free(L->bo);
            free(L->q_norm);
            free(L->k_norm);
            free(L->out_scale);
            free(L->conv_w);
            free(L->dt_bias);
            free(L->ssm_a);
            free(L->ssm_norm);
            sprig_weight_free(&L->w_qkv);
            sprig_weight_free(&L->w_z);
            sprig_weight_free(&L->w_alpha);
            sprig_weight_free(&L->w_beta);
            sprig_weight_free(&L->w_ssm_out);
            free(L->pl_post_norm);
            sprig_weight_free(&L->pl_gate);
            sprig_weight_free(&L->pl_proj);
            sprig_weight_free(&L->wq);
            sprig_weight_free(&L->wk);
            sprig_weight_free(&L->wv);
            sprig_weight_free(&L->wo);
            sprig_weight_free(&L->w_gate);
            sprig_weight_free(&L->w_up);
            sprig_weight_free(&L->w_down);
            free_experts(L, m->hp.n_expert);
        }
        free(m->layers);
    }
    for (int i = 0; m->nextn && i < m->n_nextn; i++) {
        struct sprig_nextn *X = &m->nextn[i];
        float *v[] = { X->blk.attn_norm, X->blk.ffn_norm, X->blk.q_norm, X->blk.k_norm, X->enorm, X->hnorm, X->head_norm };
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) free(v[j]);
        sprig_weight *w[] = { &X->blk.wq, &X->blk.wk, &X->blk.wv, &X->blk.wo, &X->blk.w_gate, &X->blk.w_up, &X->blk.w_down,
                              &X->eh_proj, &X->embed, &X->head };
        for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) sprig_weight_free(w[j]);
        free_experts(&X->blk, m->hp.n_expert);
    }
    free(m->nextn);
    free(m->out_norm);
    free(m->rope_freqs);
    free(m->pl_proj_norm);
    sprig_weight_free(&m->pl_model_proj);
    sprig_weight_free(&m->output);
    sprig_tokenizer_free(m->tok);
    sprig_gguf_close(m->gguf);
    free(m);
}

/* Before anything is packed: the copies sprig makes (every matrix but the
 * experts the kernels read in place and the embeddings, which are looked
 * up by row) must fit the memory available; the mapped bytes need not (the
 * kernel pages in what routing asks for), but a run is fast only while the
 * experts it touches stay cached, which is said. */
static sprig_status check_memory(const sprig_model *m, sprig_error *err)
{
    const sprig_gguf *g = m->gguf;
    double copies = 0, mapped = 0;
    bool has_output = false;
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++) {
        const sprig_gguf_tensor *t = sprig_gguf_tensor_at(g, i);
        const bool exps = strstr(t->name, "_exps.weight") != NULL;
        const bool view = is_lookup_table(t->name);
        has_output |= !strcmp(t->name, "output.weight");
        if (view || (exps && sprig_weight_maps(t->type))) mapped += (double)t->nbytes;
        else copies += (double)t->nbytes;
    }
    const sprig_gguf_tensor *emb = sprig_gguf_find_tensor(g, "token_embd.weight");
    if (!has_output && emb) copies += (double)emb->nbytes;   /* the tied output is packed from the embeddings */
    const double avail = sprig_mem_available(), gib = 1073741824.0;
    if (avail > 0 && copies > avail)
        return sprig_err(err, SPRIG_E_NOMEM, "%s: the weights sprig packs need %.2f GiB (the file holds %.2f GiB; %.2f GiB of it "
                         "is read in place); %.2f GiB of memory is available", sprig_gguf_path(g), copies / gib,
                         (double)sprig_gguf_file_size(g) / gib, mapped / gib, avail / gib);
    if (avail > 0 && copies + mapped > avail)
        SPRIG_LOGI("%s: %.2f GiB of packed weights and %.2f GiB read in place exceed the %.2f GiB of memory available: "
                   "experts will be read from the disk as routing asks for them", sprig_gguf_path(g), copies / gib, mapped / gib,
                   avail / gib);
    return SPRIG_OK;
}

sprig_status sprig_model_load_gguf(sprig_gguf *g, sprig_model **out, sprig_error *err)
{
    *out = NULL;
    const char *path = sprig_gguf_path(g);
    sprig_model *m = calloc(1, sizeof *m);
    if (!m) {
        sprig_gguf_close(g);
        return sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
    }
    m->gguf = g;
    bool *used = NULL;   /* [n_tensors]: bound by the architecture's table */
    sprig_status st;
    const char *arch;
    size_t arch_len;
    if ((st = sprig_gguf_get_str(g, "general.architecture", &arch, &arch_len, true, err))) goto fail;
    m->arch = sprig_arch_find(arch, arch_len);
    if (!m->arch) {
        char names[128];
        sprig_arch_names(names, sizeof names);
        st = sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: general.architecture '%.*s' is not supported (sprig runs: %s)",
                       path, (int)(arch_len > 64 ? 64 : arch_len), arch, names);
        goto fail;
    }
    const char *nm;
    size_t nm_len;
    if (sprig_gguf_get_str(g, "general.name", &nm, &nm_len, false, NULL) == SPRIG_OK && sprig_gguf_find_kv(g, "general.name") >= 0)
        snprintf(m->name, sizeof m->name, "%.*s", (int)(nm_len > 127 ? 127 : nm_len), nm);
    if ((st = read_hparams(g, m->arch, &m->hp, err))) goto fail;

    m->tok = sprig_tokenizer_from_gguf(g, err);
    if (!m->tok) { st = err ? err->code : SPRIG_E_FORMAT; goto fail; }
    m->hp.n_vocab = sprig_tokenizer_n_vocab(m->tok);
    uint32_t vs = 0;
    char vkey[96];
    snprintf(vkey, sizeof vkey, "%s.vocab_size", m->arch->name);
    if (sprig_gguf_find_kv(g, vkey) >= 0) {
        if ((st = sprig_gguf_get_u32(g, vkey, &vs, true, err))) goto fail;
        if ((int64_t)vs != m->hp.n_vocab) {
            st = sprig_err(err, SPRIG_E_FORMAT, "%s: %s %u differs from the %d tokenizer tokens", path, vkey, vs, m->hp.n_vocab);
            goto fail;
        }
    }

    if ((st = check_memory(m, err))) goto fail;
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    used = calloc((size_t)sprig_gguf_n_tensors(g) + 1, sizeof *used);
    if (!m->layers || !used) { st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path); goto fail; }
    m->n_nextn = m->hp.n_nextn;
    if (m->n_nextn && !(m->nextn = calloc((size_t)m->n_nextn, sizeof *m->nextn))) {
        st = sprig_err(err, SPRIG_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((st = read_swa(g, m->arch, &m->hp, m->layers, err))) goto fail;
    if ((st = read_layer_shapes(g, m->arch, &m->hp, m->layers, err))) goto fail;
    if ((st = read_hybrid(g, m->arch, &m->hp, m->layers, err))) goto fail;
    for (int i = 0; i < m->arch->n_tensors; i++) {
        const struct sprig_tensor_spec *s = &m->arch->tensors[i];
        if (!s->per_layer) {
            if ((st = bind_tensor(m, s, 0, m, NULL, used, err))) goto fail;
            continue;
        }
        for (int l = 0; l < m->hp.n_layer; l++)
            if ((st = bind_tensor(m, s, l, &m->layers[l], &m->layers[l], used, err))) goto fail;
    }
    for (int i = 0; i < m->n_nextn; i++) {   /* MTP blocks after the last layer: the model's attention shape */
        struct sprig_nextn *X = &m->nextn[i];
        X->blk.n_head = m->hp.n_head;
        X->blk.n_kv_head = m->hp.n_kv_head;
        X->blk.head_dim = m->hp.head_dim;
        X->blk.n_rot = m->hp.n_rot;
        X->blk.n_ff = m->hp.n_ff;
        X->blk.kv_layer = -1;
        X->blk.attn_gate = true;
        for (int j = 0; j < m->arch->n_nextn_tensors; j++)
            if ((st = bind_tensor(m, &m->arch->nextn_tensors[j], m->hp.n_layer + i, X, &X->blk, used, err))) goto fail;
    }
    for (int l = 0; m->arch->moe && l < m->hp.n_layer + m->n_nextn; l++) {
        struct sprig_layer *L = l < m->hp.n_layer ? &m->layers[l] : &m->nextn[l - m->hp.n_layer].blk;
        if (!L->router.raw && m->arch->moe_optional) {   /* a dense layer: no expert tensor may come without the router */
            if (L->exp_gate || L->exp_up || L->exp_down || L->router_s || L->ffn_pre_norm2 || L->exp_down_s) {
                st = sprig_err(err, SPRIG_E_FORMAT, "%s: layer %d has expert tensors but no router 'blk.%d.ffn_gate_inp.weight'", path, l, l);
                goto fail;
            }
            continue;
        }
        if ((st = check_experts(m, L, l, err))) goto fail;
    }
    /* llama.cpp refuses a file with a tensor its architecture does not load
     * ("wrong number of tensors"); sprig does the same, naming it */
    for (int64_t i = 0; i < sprig_gguf_n_tensors(g); i++)
        if (!used[i]) {
            st = sprig_err(err, SPRIG_E_UNSUPPORTED, "%s: tensor '%s' is not one architecture '%s' uses (%d layers); "
                           "sprig refuses it rather than ignore it", path, sprig_gguf_tensor_at(g, i)->name, m->arch->name,
                           m->hp.n_layer);
            goto fail;
        }
    free(used);
    used = NULL;
    for (int l = 0; l < m->hp.n_layer; l++) {   /* what the layer's role needs (gemma4's, qwen35's optional tensors) */
        struct sprig_layer *L = &m->layers[l];
        if (m->arch->hybrid && (L->recurrent ? L->wq.raw || L->wk.raw || L->wv.raw || L->wo.raw || L->q_norm || L->k_norm
                                             : L->w_qkv.raw || L->w_z.raw || L->conv_w || L->w_ssm_out.raw || L->ssm_a)) {
            st = sprig_err(err, SPRIG_E_FORMAT, "%s: layer %d is %s (%s.attention.recurrent_layers / full_attention_interval) but "
                           "holds %s tensors", path, l, L->recurrent ? "recurrent" : "an attention layer", m->arch->name,
                           L->recurrent ? "attention" : "delta-net");
            goto fail;
        }
        const char *missing = NULL;
        if (L->recurrent) {   /* a gated delta-net layer */
            missing = !L->w_qkv.raw ? "attn_qkv.weight" : !L->w_z.raw ? "attn_gate.weight" : !L->conv_w ? "ssm_conv1d.weight"
                    : !L->dt_bias ? "ssm_dt.bias" : !L->ssm_a ? "ssm_a" : !L->w_beta.raw ? "ssm_beta.weight"
                    : !L->w_alpha.raw ? "ssm_alpha.weight" : !L->ssm_norm ? "ssm_norm.weight" : !L->w_ssm_out.raw ? "ssm_out.weight" : NULL;
        } else if (m->arch->hybrid && !L->wq.raw) missing = "attn_q.weight";
        else if (m->arch->hybrid && !L->wv.raw) missing = "attn_v.weight";
        else if (m->arch->hybrid && !L->wo.raw) missing = "attn_output.weight";
        else if (m->arch->hybrid && !L->q_norm) missing = "attn_q_norm.weight";
        else if (L->kv_layer == l && !L->wk.raw) missing = "attn_k.weight";
        else if (L->kv_layer == l && m->layers[0].q_norm && !L->k_norm) missing = "attn_k_norm.weight";
        else if (m->hp.n_pl && !L->pl_gate.raw) missing = "inp_gate.weight";
        else if (m->hp.n_pl && !L->pl_proj.raw) missing = "proj.weight";
        else if (m->hp.n_pl && !L->pl_post_norm) missing = "post_norm.weight";
        if (missing) {
            st = sprig_err(err, SPRIG_E_FORMAT, "%s: missing tensor 'blk.%d.%s'%s", path, l, missing,
                           L->kv_layer == l ? "" : " (a per-layer input layer)");
            goto fail;
        }
        L->v_is_k = L->kv_layer == l && !L->wv.raw;
    }
    if (m->hp.n_pl && (!m->pl_tok_embd.raw || !m->pl_model_proj.raw || !m->pl_proj_norm)) {
        st = sprig_err(err, SPRIG_E_FORMAT, "%s: %s.embedding_length_per_layer_input = %d needs per_layer_token_embd, "
                       "per_layer_model_proj and per_layer_proj_norm", path, m->arch->name, m->hp.n_pl);
        goto fail;
    }
    if (m->rope_freqs)   /* divisors of the RoPE frequencies: finite and positive */
        for (int i = 0; i < m->hp.n_rot / 2; i++)
            if (!(m->rope_freqs[i] > 0 && m->rope_freqs[i] <= 3.4e38f)) {   /* gemma4 writes 1e30: a pair left unrotated */
                st = sprig_err(err, SPRIG_E_FORMAT, "%s: tensor 'rope_freqs.weight' element %d = %g is not a positive finite factor",
                               path, i, (double)m->rope_freqs[i]);
                goto fail;
            }
    if (!m->output.raw) {
        m->tied_output = true;
        if ((st = sprig_weight_init(&m->output, "output.weight (tied to token_embd.weight)", m->tok_embd.type,
                                    m->tok_embd.raw, m->tok_embd.n_in, m->tok_embd.n_out, err))) {
            sprig_err_prefix(err, "%s", path);
            goto fail;
        }
        m->weight_bytes += m->tok_embd.row_bytes * (size_t)m->tok_embd.n_out;
    }
    *out = m;
    return SPRIG_OK;
fail:
    free(used);
    sprig_model_free(m);
    return st;
}

sprig_status sprig_model_load(const char *path, sprig_model **out, sprig_error *err)
{
    *out = NULL;
    double t0 = sprig_time_ms();
    sprig_gguf *g = sprig_gguf_open(path, err);
    if (!g) return err ? err->code : SPRIG_E_FORMAT;
    sprig_status st = sprig_model_load_gguf(g, out, err);
    if (st == SPRIG_OK) (*out)->load_ms = sprig_time_ms() - t0;
    return st;
}
