/*
 * model/arch — the architecture table (see arch.h).
 *
 * Names and shapes are llama.cpp's (GGUF ne = [in, out]):
 *
 * llama:  token_embd, output_norm, optional output (tied to token_embd when
 *         absent), optional rope_freqs [n_rot/2] (Llama 3.x frequency
 *         divisors), and per block attn_norm, attn_q/k/v/output, ffn_norm,
 *         ffn_gate/up/down; optional attn_q/k/v.bias and attn_output.bias
 *         [dim] (added to the output projection before the residual add).
 *         NORM RoPE pairing.
 * qwen2:  llama's tensors without rope_freqs, attn_q/k/v.bias required
 *         (Qwen 2 / 2.5 always have them). NEOX pairing.
 * qwen3:  llama's tensors without rope_freqs, plus attn_q_norm and
 *         attn_k_norm [head_dim] (RMSNorm of every q and k head before
 *         RoPE); biases optional as in llama.cpp. NEOX pairing. Its head
 *         size comes from qwen3.attention.key_length (128 for 0.6B, whose
 *         16 heads then span 2048 > dim 1024).
 * gemma3: qwen3's tensors plus post_attention_norm and post_ffw_norm [dim]
 *         (RMSNorm of the attention / FFN output before its residual add);
 *         GELU-tanh gated FFN, embeddings times sqrt(dim), tied output
 *         unless output.weight is present. Sliding-window layers by
 *         gemma3.attention.sliding_window and _pattern (period 6 by
 *         default: five local layers, one global), local RoPE theta from
 *         rope.freq_base_swa (default 10000, no linear scaling), final logit
 *         soft-capping when final_logit_softcapping is set; queries scaled by
 *         1/sqrt(head_dim), 1/sqrt(dim / n_head) for the 62-layer (27B)
 *         shape. NEOX pairing.
 * qwen3moe: qwen3's attention, routed experts instead of the FFN (below).
 * A tensor of the file that its row does not name is refused (llama.cpp:
 * "wrong number of tensors"), so nothing a file holds is silently ignored;
 * that is also why qwen2/qwen3 have no attn_output.bias row (llama.cpp does
 * not load one for them).
 * Every row runs the shared batched forward (model/llama.c), which applies
 * whichever optional pieces a layer bound.
 */
#include "model/arch.h"
#include "tensor/ops.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define G(nm, req, b, d0, d1, field) { nm, false, req, b, d0, d1, offsetof(sprig_model, field), SPRIG_D_NONE }
#define L(nm, b, d0, d1, field) { nm, true, true, b, d0, d1, offsetof(struct sprig_layer, field), SPRIG_D_NONE }
#define LO(nm, b, d0, d1, field) { nm, true, false, b, d0, d1, offsetof(struct sprig_layer, field), SPRIG_D_NONE }

/* the embeddings, the final norm and the output (absent: tied to the embeddings) */
#define EMBED_OUTPUT \
    G("token_embd.weight",  true,  SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, tok_embd), \
    G("output_norm.weight", true,  SPRIG_BIND_NORM,   SPRIG_D_DIM, SPRIG_D_NONE,  out_norm), \
    G("output.weight",      false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, output)

/* what every llama-like row has before its FFN: the embeddings and output,
 * the attention and the FFN's input norm */
#define COMMON_ATTN \
    EMBED_OUTPUT, \
    L("blk.%d.attn_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm), \
    L("blk.%d.attn_q.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QDIM,  wq), \
    L("blk.%d.attn_k.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk), \
    L("blk.%d.attn_v.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv), \
    L("blk.%d.attn_output.weight", SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,   wo), \
    L("blk.%d.ffn_norm.weight",    SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  ffn_norm)
/* ... and the dense FFN */
#define COMMON_TENSORS \
    COMMON_ATTN, \
    L("blk.%d.ffn_gate.weight",    SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate), \
    L("blk.%d.ffn_up.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up), \
    L("blk.%d.ffn_down.weight",    SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down)

/* q/k/v biases: req = L (qwen2) or LO (optional, as llama.cpp loads them for llama and qwen3) */
#define QKV_BIASES(req) \
    req("blk.%d.attn_q.bias", SPRIG_BIND_NORM, SPRIG_D_QDIM,  SPRIG_D_NONE, bq), \
    req("blk.%d.attn_k.bias", SPRIG_BIND_NORM, SPRIG_D_KVDIM, SPRIG_D_NONE, bk), \
    req("blk.%d.attn_v.bias", SPRIG_BIND_NORM, SPRIG_D_KVDIM, SPRIG_D_NONE, bv)

static const struct sprig_tensor_spec llama_tensors[] = {
    COMMON_TENSORS,
    G("rope_freqs.weight", false, SPRIG_BIND_NORM, SPRIG_D_ROT_HALF, SPRIG_D_NONE, rope_freqs),
    QKV_BIASES(LO),
    LO("blk.%d.attn_output.bias", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, bo),
};

static const struct sprig_tensor_spec qwen2_tensors[] = {
    COMMON_TENSORS,
    QKV_BIASES(L),
};

static const struct sprig_tensor_spec qwen3_tensors[] = {
    COMMON_TENSORS,
    L("blk.%d.attn_q_norm.weight", SPRIG_BIND_NORM, SPRIG_D_HEAD, SPRIG_D_NONE, q_norm),
    L("blk.%d.attn_k_norm.weight", SPRIG_BIND_NORM, SPRIG_D_HEAD, SPRIG_D_NONE, k_norm),
    QKV_BIASES(LO),
};

/* gemma2: the post-attention and post-FFN norms, no q/k norms; output tied
 * (llama.cpp's gemma2 never loads an output.weight: one is refused) */
static const struct sprig_tensor_spec gemma2_tensors[] = {
    G("token_embd.weight",  true,  SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, tok_embd),
    G("output_norm.weight", true,  SPRIG_BIND_NORM,   SPRIG_D_DIM, SPRIG_D_NONE,  out_norm),
    L("blk.%d.attn_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm),
    L("blk.%d.attn_q.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QDIM,  wq),
    L("blk.%d.attn_k.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk),
    L("blk.%d.attn_v.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv),
    L("blk.%d.attn_output.weight", SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,   wo),
    L("blk.%d.ffn_norm.weight",    SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  ffn_norm),
    L("blk.%d.ffn_gate.weight",    SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate),
    L("blk.%d.ffn_up.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up),
    L("blk.%d.ffn_down.weight",    SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down),
    L("blk.%d.post_attention_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, attn_post_norm),
    L("blk.%d.post_ffw_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_post_norm),
};

/* gemma3: qwen3's tensors plus the post-attention and post-FFN norms; GELU
 * FFN, embeddings scaled by sqrt(dim), tied output (llama.cpp's gemma3) */
static const struct sprig_tensor_spec gemma3_tensors[] = {
    COMMON_TENSORS,
    L("blk.%d.attn_q_norm.weight", SPRIG_BIND_NORM, SPRIG_D_HEAD, SPRIG_D_NONE, q_norm),
    L("blk.%d.attn_k_norm.weight", SPRIG_BIND_NORM, SPRIG_D_HEAD, SPRIG_D_NONE, k_norm),
    L("blk.%d.post_attention_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, attn_post_norm),
    L("blk.%d.post_ffw_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_post_norm),
};

/* routed experts whose gate and up come split or fused, optional per layer (gemma4) */
#define LXOPT(nm, b, d0, d1, field) { nm, true, false, b, d0, d1, offsetof(struct sprig_layer, field), SPRIG_D_EXPERTS }
#define GEMMA4_EXPERTS \
    LXOPT("blk.%d.ffn_gate_exps.weight", SPRIG_BIND_EXPERTS, SPRIG_D_DIM, SPRIG_D_FF_EXP, exp_gate), \
    LXOPT("blk.%d.ffn_up_exps.weight",   SPRIG_BIND_EXPERTS, SPRIG_D_DIM, SPRIG_D_FF_EXP, exp_up), \
    LXOPT("blk.%d.ffn_gate_up_exps.weight", SPRIG_BIND_EXPERTS_GU, SPRIG_D_DIM, SPRIG_D_FF_EXP2, exp_gate), \
    LXOPT("blk.%d.ffn_down_exps.weight", SPRIG_BIND_EXPERTS, SPRIG_D_FF_EXP, SPRIG_D_DIM, exp_down)
/* llama.cpp's per-expert output scales ([E], every architecture with experts reads them when present) */
#define EXPERT_SCALES \
    LO("blk.%d.ffn_gate_exps.scale", SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_gate_s), \
    LO("blk.%d.ffn_up_exps.scale",   SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_up_s), \
    LO("blk.%d.ffn_down_exps.scale", SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_down_s)

/* gemma4 (dense): gemma3's layer with per-layer shapes; K (and its norm)
 * only on layers that keep a cache, V optional (K's projection stands in),
 * a scalar output scale per layer, and the per-layer token inputs of the
 * small variants (llama.cpp's gemma4). rope_freqs: the global layers'
 * proportional RoPE. */
static const struct sprig_tensor_spec gemma4_tensors[] = {
    G("token_embd.weight",  true,  SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, tok_embd),
    G("output_norm.weight", true,  SPRIG_BIND_NORM,   SPRIG_D_DIM, SPRIG_D_NONE,  out_norm),
    G("output.weight",      false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, output),
    G("rope_freqs.weight",  false, SPRIG_BIND_NORM,   SPRIG_D_ROT_HALF, SPRIG_D_NONE, rope_freqs),
    G("per_layer_token_embd.weight", false, SPRIG_BIND_MATRIX, SPRIG_D_PL_ALL, SPRIG_D_VOCAB, pl_tok_embd),
    G("per_layer_model_proj.weight", false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_PL_ALL, pl_model_proj),
    G("per_layer_proj_norm.weight",  false, SPRIG_BIND_NORM,   SPRIG_D_PL, SPRIG_D_NONE, pl_proj_norm),
    L("blk.%d.attn_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm),
    L("blk.%d.attn_q.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QDIM,  wq),
    LO("blk.%d.attn_k.weight",     SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk),
    LO("blk.%d.attn_v.weight",     SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv),
    L("blk.%d.attn_output.weight", SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,   wo),
    L("blk.%d.attn_q_norm.weight", SPRIG_BIND_NORM,   SPRIG_D_HEAD, SPRIG_D_NONE,  q_norm),
    LO("blk.%d.attn_k_norm.weight", SPRIG_BIND_NORM,  SPRIG_D_HEAD, SPRIG_D_NONE,  k_norm),
    L("blk.%d.post_attention_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, attn_post_norm),
    L("blk.%d.ffn_norm.weight",    SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  ffn_norm),
    L("blk.%d.ffn_gate.weight",    SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate),
    L("blk.%d.ffn_up.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up),
    L("blk.%d.ffn_down.weight",    SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down),
    L("blk.%d.post_ffw_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_post_norm),
    LO("blk.%d.layer_output_scale.weight", SPRIG_BIND_NORM, SPRIG_D_ONE, SPRIG_D_NONE, out_scale),
    LO("blk.%d.inp_gate.weight",   SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_PL,    pl_gate),
    LO("blk.%d.proj.weight",       SPRIG_BIND_MATRIX, SPRIG_D_PL,   SPRIG_D_DIM,   pl_proj),
    LO("blk.%d.post_norm.weight",  SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  pl_post_norm),
    /* a layer with experts (llama.cpp's gemma4.cpp; model.c checks a router brings the rest) */
    LO("blk.%d.ffn_gate_inp.weight", SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_EXPERTS, router),
    LO("blk.%d.ffn_gate_inp.scale",  SPRIG_BIND_NORM,   SPRIG_D_DIM, SPRIG_D_NONE,    router_s),
    LO("blk.%d.pre_ffw_norm_2.weight",  SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_pre_norm2),
    LO("blk.%d.post_ffw_norm_1.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_post_norm1),
    LO("blk.%d.post_ffw_norm_2.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_post_norm2),
    GEMMA4_EXPERTS,
    EXPERT_SCALES,
};

/* qwen3moe: qwen3's attention layers; the FFN is routed experts
 * (model/moe.h): the router ffn_gate_inp [dim, E] and the experts'
 * ffn_gate_exps / ffn_up_exps [dim, n_ff_exp, E], ffn_down_exps [n_ff_exp,
 * dim, E] (llama.cpp's qwen3moe.cpp); no dense FFN, no shared expert. */
#define LX(nm, d0, d1, field) { nm, true, true, SPRIG_BIND_EXPERTS, d0, d1, offsetof(struct sprig_layer, field), SPRIG_D_EXPERTS }
static const struct sprig_tensor_spec qwen3moe_tensors[] = {
    COMMON_ATTN,
    L("blk.%d.attn_q_norm.weight", SPRIG_BIND_NORM,   SPRIG_D_HEAD, SPRIG_D_NONE,  q_norm),
    L("blk.%d.attn_k_norm.weight", SPRIG_BIND_NORM,   SPRIG_D_HEAD, SPRIG_D_NONE,  k_norm),
    QKV_BIASES(LO),
    L("blk.%d.ffn_gate_inp.weight", SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_EXPERTS, router),
    LX("blk.%d.ffn_gate_exps.weight", SPRIG_D_DIM,    SPRIG_D_FF_EXP, exp_gate),
    LX("blk.%d.ffn_down_exps.weight", SPRIG_D_FF_EXP, SPRIG_D_DIM,    exp_down),
    LX("blk.%d.ffn_up_exps.weight",   SPRIG_D_DIM,    SPRIG_D_FF_EXP, exp_up),
    EXPERT_SCALES,
};

/* qwen35's trunk, dense or with experts: the output, the norms, the gated
 * attention layers' and the gated delta-net layers' tensors */
#define QWEN35_TRUNK \
    EMBED_OUTPUT, \
    L("blk.%d.attn_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm), \
    L("blk.%d.post_attention_norm.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_norm), \
    LO("blk.%d.attn_q.weight",     SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QGDIM, wq), \
    LO("blk.%d.attn_k.weight",     SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk), \
    LO("blk.%d.attn_v.weight",     SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv), \
    LO("blk.%d.attn_output.weight", SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,  wo), \
    LO("blk.%d.attn_q_norm.weight", SPRIG_BIND_NORM,  SPRIG_D_HEAD, SPRIG_D_NONE,  q_norm), \
    LO("blk.%d.attn_k_norm.weight", SPRIG_BIND_NORM,  SPRIG_D_HEAD, SPRIG_D_NONE,  k_norm), \
    LO("blk.%d.attn_qkv.weight",   SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_SSM_CONV, w_qkv), \
    LO("blk.%d.attn_gate.weight",  SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_SSM_V, w_z), \
    LO("blk.%d.ssm_conv1d.weight", SPRIG_BIND_NORM,   SPRIG_D_SSM_K, SPRIG_D_SSM_CONV, conv_w), \
    LO("blk.%d.ssm_dt.bias",       SPRIG_BIND_NORM,   SPRIG_D_SSM_VH, SPRIG_D_NONE, dt_bias), \
    LO("blk.%d.ssm_a",             SPRIG_BIND_NORM,   SPRIG_D_SSM_VH, SPRIG_D_NONE, ssm_a), \
    LO("blk.%d.ssm_beta.weight",   SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_SSM_VH, w_beta), \
    LO("blk.%d.ssm_alpha.weight",  SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_SSM_VH, w_alpha), \
    LO("blk.%d.ssm_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_SSM_S, SPRIG_D_NONE, ssm_norm), \
    LO("blk.%d.ssm_out.weight",    SPRIG_BIND_MATRIX, SPRIG_D_SSM_V, SPRIG_D_DIM,  w_ssm_out)

/* qwen35 (dense): attention layers with q/k norms and an output gate (attn_q
 * holds [q | gate] per head), gated delta-net layers, and post_attention_norm
 * as the FFN's input norm (llama.cpp's name for it there); which tensors a
 * layer needs depends on its kind (model.c checks). */
static const struct sprig_tensor_spec qwen35_tensors[] = {
    QWEN35_TRUNK,
    L("blk.%d.ffn_gate.weight",    SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate),
    L("blk.%d.ffn_up.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up),
    L("blk.%d.ffn_down.weight",    SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down),
};

/* qwen35moe: qwen35's layers with routed experts (gate and up split or fused
 * into ffn_gate_up_exps [dim, 2 F, E]) and a shared expert whose output is
 * gated by sigmoid(ffn_gate_inp_shexp . x) (llama.cpp's qwen35moe.cpp);
 * model.c checks that a layer has one of the two expert forms. */
#define LXO(nm, b, d0, d1, field) { nm, true, false, b, d0, d1, offsetof(struct sprig_layer, field), SPRIG_D_EXPERTS }
#define QWEN35_MOE_FFN(X, XO, XR) \
    X("blk.%d.ffn_gate_inp.weight",  SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_EXPERTS, router), \
    XR("blk.%d.ffn_down_exps.weight", SPRIG_D_FF_EXP, SPRIG_D_DIM, exp_down), \
    XO("blk.%d.ffn_gate_exps.weight", SPRIG_BIND_EXPERTS, SPRIG_D_DIM, SPRIG_D_FF_EXP, exp_gate), \
    XO("blk.%d.ffn_up_exps.weight",   SPRIG_BIND_EXPERTS, SPRIG_D_DIM, SPRIG_D_FF_EXP, exp_up), \
    XO("blk.%d.ffn_gate_up_exps.weight", SPRIG_BIND_EXPERTS_GU, SPRIG_D_DIM, SPRIG_D_FF_EXP2, exp_gate), \
    X("blk.%d.ffn_gate_inp_shexp.weight", SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, sh_gate_inp), \
    X("blk.%d.ffn_gate_shexp.weight", SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_FF_SHEXP, sh_gate), \
    X("blk.%d.ffn_up_shexp.weight",   SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_FF_SHEXP, sh_up), \
    X("blk.%d.ffn_down_shexp.weight", SPRIG_BIND_MATRIX, SPRIG_D_FF_SHEXP, SPRIG_D_DIM, sh_down)
#define LXR(nm, d0, d1, field) LX(nm, d0, d1, field)
static const struct sprig_tensor_spec qwen35moe_tensors[] = {
    QWEN35_TRUNK,
    QWEN35_MOE_FFN(L, LXO, LXR),
    EXPERT_SCALES,
};
#undef LXR

/* qwen35's MTP blocks (llama.cpp's load_block_mtp): blk.N.* for N past the last layer */
#define NB(nm, req, b, d0, d1, field) { nm, true, req, b, d0, d1, offsetof(struct sprig_nextn, blk) + offsetof(struct sprig_layer, field), SPRIG_D_NONE }
#define NX(nm, req, b, d0, d1, field) { nm, true, req, b, d0, d1, offsetof(struct sprig_nextn, field), SPRIG_D_NONE }
/* the MTP block's attention (its layer's norms and gated attention) and its head (the projection of
 * [embedding, hidden], their norms, the optional own embeddings and output) */
#define QWEN35_NEXTN_ATTN \
    NB("blk.%d.attn_norm.weight",   true, SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm), \
    NB("blk.%d.post_attention_norm.weight", true, SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, ffn_norm), \
    NB("blk.%d.attn_q.weight",      true, SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QGDIM, wq), \
    NB("blk.%d.attn_k.weight",      true, SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk), \
    NB("blk.%d.attn_v.weight",      true, SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv), \
    NB("blk.%d.attn_output.weight", true, SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,   wo), \
    NB("blk.%d.attn_q_norm.weight", true, SPRIG_BIND_NORM,   SPRIG_D_HEAD, SPRIG_D_NONE,  q_norm), \
    NB("blk.%d.attn_k_norm.weight", true, SPRIG_BIND_NORM,   SPRIG_D_HEAD, SPRIG_D_NONE,  k_norm)
#define QWEN35_NEXTN_HEAD \
    NX("blk.%d.nextn.eh_proj.weight", true, SPRIG_BIND_MATRIX, SPRIG_D_DIM2, SPRIG_D_DIM, eh_proj), \
    NX("blk.%d.nextn.enorm.weight", true, SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  enorm), \
    NX("blk.%d.nextn.hnorm.weight", true, SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  hnorm), \
    NX("blk.%d.nextn.embed_tokens.weight", false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, embed), \
    NX("blk.%d.nextn.shared_head_head.weight", false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, head), \
    NX("blk.%d.nextn.shared_head_norm.weight", false, SPRIG_BIND_NORM, SPRIG_D_DIM, SPRIG_D_NONE, head_norm)
static const struct sprig_tensor_spec qwen35_nextn_tensors[] = {
    QWEN35_NEXTN_ATTN,
    NB("blk.%d.ffn_gate.weight",    true, SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate),
    NB("blk.%d.ffn_up.weight",      true, SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up),
    NB("blk.%d.ffn_down.weight",    true, SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down),
    QWEN35_NEXTN_HEAD,
};
/* qwen35moe's MTP block: the same with the layers' experts */
#define NBX(nm, d0, d1, field) { nm, true, true, SPRIG_BIND_EXPERTS, d0, d1, \
    offsetof(struct sprig_nextn, blk) + offsetof(struct sprig_layer, field), SPRIG_D_EXPERTS }
#define NBXO(nm, b, d0, d1, field) { nm, true, false, b, d0, d1, \
    offsetof(struct sprig_nextn, blk) + offsetof(struct sprig_layer, field), SPRIG_D_EXPERTS }
#define NBR(nm, b, d0, d1, field) NB(nm, true, b, d0, d1, field)
#define NBO(nm, b, d0, d1, field) NB(nm, false, b, d0, d1, field)
static const struct sprig_tensor_spec qwen35moe_nextn_tensors[] = {
    QWEN35_NEXTN_ATTN,
    QWEN35_MOE_FFN(NBR, NBXO, NBX),
    /* llama.cpp reads the per-expert scales on every layer, the MTP block's included (n_layer_all) */
    NBO("blk.%d.ffn_gate_exps.scale", SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_gate_s),
    NBO("blk.%d.ffn_up_exps.scale",   SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_up_s),
    NBO("blk.%d.ffn_down_exps.scale", SPRIG_BIND_NORM, SPRIG_D_EXPERTS, SPRIG_D_NONE, exp_down_s),
    QWEN35_NEXTN_HEAD,
};
#undef NBO
#undef QWEN35_NEXTN_ATTN
#undef QWEN35_NEXTN_HEAD
#undef NBX
#undef NBXO
#undef NBR
#undef NB
#undef NX
#undef QWEN35_MOE_FFN
#undef QWEN35_TRUNK
#undef GEMMA4_EXPERTS
#undef EXPERT_SCALES
#undef LXOPT
#undef LX
#undef LXO

#undef G
#undef L
#undef LO
#undef COMMON_TENSORS
#undef COMMON_ATTN
#undef QKV_BIASES

/* SWA: { default period, local layers' own RoPE, 27B query-scale layer count, default window }
 * CAP: { reads final, reads attention, final default, attention default } */
#define ROWF(nm, mode, t, fwd, act, es, swa, cap, hyb, nt, shapes) \
    { nm, mode, t, (int)(sizeof t / sizeof t[0]), fwd, act, es, swa, cap, hyb, nt, (int)(sizeof nt / sizeof nt[0]), shapes, NULL, false, false, false }
#define ROW(nm, mode, t, act, es, swa, cap, shapes) \
    { nm, mode, t, (int)(sizeof t / sizeof t[0]), sprig_llama_forward, act, es, swa, cap, false, NULL, 0, shapes, \
      sprig_llama_forward_multi, false, false, false }
/* a row whose FFNs are routed experts (model/moe.h) */
#define ROW_MOE(nm, mode, t, act) \
    { nm, mode, t, (int)(sizeof t / sizeof t[0]), sprig_llama_forward, act, false, { 0, false, 0, 0 }, { false, false, 0.0f, 0.0f }, \
      false, NULL, 0, false, sprig_llama_forward_multi, true, false, false }
#define SWA(period, own_rope, dim_layers, window) { period, own_rope, dim_layers, window }
#define NO_SWA SWA(0, false, 0, 0)
#define CAP(fr, ar, fd, ad) { fr, ar, fd, ad }
#define NO_CAP CAP(false, false, 0.0f, 0.0f)
static const struct sprig_arch arches[] = {
    ROW("llama", SPRIG_ROPE_NORM, llama_tensors, SPRIG_FFN_SILU, false, NO_SWA, NO_CAP, false),
    ROW("qwen2", SPRIG_ROPE_NEOX, qwen2_tensors, SPRIG_FFN_SILU, false, NO_SWA, NO_CAP, false),
    ROW("qwen3", SPRIG_ROPE_NEOX, qwen3_tensors, SPRIG_FFN_SILU, false, NO_SWA, NO_CAP, false),
    ROW_MOE("qwen3moe", SPRIG_ROPE_NEOX, qwen3moe_tensors, SPRIG_FFN_SILU),
    /* gemma2: every other layer slides (window 4096 by default), local RoPE = global, both caps on by default */
    ROW("gemma2", SPRIG_ROPE_NEOX, gemma2_tensors, SPRIG_FFN_GELU, true, SWA(2, false, 46, 4096), CAP(true, true, 30.0f, 50.0f), false),
    ROW("gemma3", SPRIG_ROPE_NEOX, gemma3_tensors, SPRIG_FFN_GELU, true, SWA(6, true, 62, 0), CAP(true, false, 0.0f, 0.0f), false),
    /* gemma4: the per-layer pattern array is required (period -1) */
    { "gemma4", SPRIG_ROPE_NEOX, gemma4_tensors, (int)(sizeof gemma4_tensors / sizeof gemma4_tensors[0]), sprig_llama_forward,
      SPRIG_FFN_GELU, true, SWA(-1, true, 0, 0), CAP(true, false, 0.0f, 0.0f), false, NULL, 0, true, sprig_llama_forward_multi,
      true, false, true },   /* experts where a layer has a router (26B-A4B), beside its dense MLP */
    /* qwen35: its own forward (model/qwen35.c); multi-section RoPE that for text is NEOX over n_rot dims */
    ROWF("qwen35", SPRIG_ROPE_NEOX, qwen35_tensors, sprig_qwen35_forward, SPRIG_FFN_SILU, false, NO_SWA, NO_CAP, true,
         qwen35_nextn_tensors, false),
    /* qwen35moe: qwen35 with routed experts and a gated shared expert, its MTP block too */
    { "qwen35moe", SPRIG_ROPE_NEOX, qwen35moe_tensors, (int)(sizeof qwen35moe_tensors / sizeof qwen35moe_tensors[0]),
      sprig_qwen35_forward, SPRIG_FFN_SILU, false, NO_SWA, NO_CAP, true, qwen35moe_nextn_tensors,
      (int)(sizeof qwen35moe_nextn_tensors / sizeof qwen35moe_nextn_tensors[0]), false, NULL, true, true, false },
};
#undef NO_SWA
#undef SWA
#undef NO_CAP
#undef CAP
#undef ROW
#undef ROW_MOE
#undef ROWF

void sprig_arch_names(char *buf, size_t cap)
{
    size_t o = 0;
    if (!cap) return;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof arches / sizeof arches[0] && o < cap; i++) {
        int k = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", arches[i].name);
        if (k < 0) break;
        o += (size_t)k;
    }
}

const struct sprig_arch *sprig_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (strlen(arches[i].name) == len && !memcmp(arches[i].name, name, len)) return &arches[i];
    return NULL;
}
