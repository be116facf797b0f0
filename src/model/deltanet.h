/*
 * model/deltanet — the core of a gated delta-net layer (Qwen 3.5's linear
 * attention), one token at a time: the short causal convolution with its
 * state, L2-normalised q and k, the decay and the delta rule on each value
 * head's state matrix, o = S^T q / sqrt(state). llama.cpp's arithmetic
 * (ggml_ssm_conv, ggml_l2_norm, softplus, ggml_gated_delta_net), written
 * plainly: this is the spec the batched forward calls row by row, so a
 * verify block of n tokens runs exactly the n single steps decoding runs
 * (a token's bits never depend on the batch around it).
 *
 * Per token t, with x_t = attn_qkv(xn_t) [conv_dim], conv_dim = 2 kd + vd,
 * kd = k_heads * state, vd = v_heads * state:
 *   c = silu(sum_{j<K} w[ch][j] * win[j][ch]),  win = [conv_state; x_t]
 *   q, k = l2norm(c[0:kd]), l2norm(c[kd:2kd]) per head (x / max(|x|, eps))
 *   v = c[2kd:]
 *   per value head h (q/k head h % k_heads):
 *     g = softplus(alpha_h + dt_bias_h) * a_h;  beta = sigmoid(beta_h)
 *     S *= exp(g);  d_j = (v_j - sum_i S[i][j] k_i) beta;  S[i][j] += k_i d_j
 *     o_j = (sum_i S[i][j] q_i) / sqrt(state)
 * S is stored transposed (M[j][i] = S[i][j], llama.cpp's layout) so every
 * sum runs over contiguous memory. conv_state holds the last K - 1 inputs,
 * oldest first; both states start at zero for an empty sequence.
 */
#ifndef SPRIG_MODEL_DELTANET_H
#define SPRIG_MODEL_DELTANET_H

struct sprig_deltanet {
    int K;          /* convolution taps */
    int state;      /* a head's key and value size */
    int k_heads, v_heads;
    float eps;      /* the L2 norm's floor (the model's RMS epsilon, as llama.cpp) */
};

static inline int sprig_deltanet_conv_dim(const struct sprig_deltanet *d)
{
    return (2 * d->k_heads + d->v_heads) * d->state;
}

/* The token's convolution over the window conv_in, the slid window into
 * conv_out (may be conv_in), silu and the q/k L2 norms: qkv becomes the
 * normalised q|k|v. */
void sprig_deltanet_conv(const struct sprig_deltanet *d, const float *conv_w, const float *conv_in, float *conv_out, float *qkv);
/* Value heads [h0, h1) of the token's state update from S_in into S (may
 * be S_in: in place) and its output (heads are independent: threads may
 * split them; out of place, the previous state survives the step, which is
 * what a rollback keeps). */
void sprig_deltanet_heads(const struct sprig_deltanet *d, int h0, int h1, const float *dt_bias, const float *a, const float *S_in,
                          float *S, const float *qkv, const float *alpha, const float *beta, float *o);

/* One token (conv, then every head). conv_w [conv_dim][K], dt_bias / a [v_heads]; conv_state
 * [(K-1)][conv_dim] and S [v_heads][state][state] updated in place;
 * qkv [conv_dim] (clobbered: it becomes the convolved, normalised q|k|v),
 * alpha / beta [v_heads] (raw projections); o [v_heads * state]. */
void sprig_deltanet_step(const struct sprig_deltanet *d, const float *conv_w, const float *dt_bias, const float *a,
                         float *conv_state, float *S, float *qkv, const float *alpha, const float *beta, float *o);

#endif
