/*
 * model/arch — the architecture table (see arch.h).
 *
 * llama: token_embd, output_norm, optional output (tied to token_embd when
 * absent), and per block attn_norm, attn_q/k/v/output, ffn_norm,
 * ffn_gate/up/down. Shapes are GGUF ne = [in, out].
 */
#include "model/arch.h"
#include "tensor/ops.h"

#include <stddef.h>
#include <string.h>

#define G(nm, req, b, d0, d1, field) { nm, false, req, b, d0, d1, offsetof(sprig_model, field) }
#define L(nm, b, d0, d1, field) { nm, true, true, b, d0, d1, offsetof(struct sprig_layer, field) }

static const struct sprig_tensor_spec llama_tensors[] = {
    G("token_embd.weight",  true,  SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, tok_embd),
    G("output_norm.weight", true,  SPRIG_BIND_NORM,   SPRIG_D_DIM, SPRIG_D_NONE,  out_norm),
    G("output.weight",      false, SPRIG_BIND_MATRIX, SPRIG_D_DIM, SPRIG_D_VOCAB, output),
    L("blk.%d.attn_norm.weight",   SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  attn_norm),
    L("blk.%d.attn_q.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_QDIM,  wq),
    L("blk.%d.attn_k.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wk),
    L("blk.%d.attn_v.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_KVDIM, wv),
    L("blk.%d.attn_output.weight", SPRIG_BIND_MATRIX, SPRIG_D_QDIM, SPRIG_D_DIM,   wo),
    L("blk.%d.ffn_norm.weight",    SPRIG_BIND_NORM,   SPRIG_D_DIM,  SPRIG_D_NONE,  ffn_norm),
    L("blk.%d.ffn_gate.weight",    SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_gate),
    L("blk.%d.ffn_up.weight",      SPRIG_BIND_MATRIX, SPRIG_D_DIM,  SPRIG_D_FF,    w_up),
    L("blk.%d.ffn_down.weight",    SPRIG_BIND_MATRIX, SPRIG_D_FF,   SPRIG_D_DIM,   w_down),
};

#undef G
#undef L

static const struct sprig_arch arches[] = {
    { "llama", SPRIG_ROPE_NORM, llama_tensors, (int)(sizeof llama_tensors / sizeof llama_tensors[0]), sprig_llama_forward },
};

const struct sprig_arch *sprig_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (strlen(arches[i].name) == len && !memcmp(arches[i].name, name, len)) return &arches[i];
    return NULL;
}
