/*
 * tensor/ops — the row-wise operations of a transformer layer, plain C with
 * SIMD where it pays. Every op treats rows independently, so a row's result
 * never depends on the batch around it (see matmul.h for why).
 *
 * Shapes: x is [n][dim] row-major unless stated.
 */
#ifndef SPRIG_TENSOR_OPS_H
#define SPRIG_TENSOR_OPS_H

#include <stdint.h>

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w   (out may alias x) */
void sprig_rmsnorm(float *out, const float *x, const float *w, int n, int dim, float eps);

enum sprig_rope_mode { SPRIG_ROPE_NORM = 0, SPRIG_ROPE_NEOX = 1 };

/* Rotate the first n_rot dims of every head of x[n][n_head*hd] in place at
 * positions pos[n]: NORM pairs (2i, 2i+1), NEOX pairs (i, i + n_rot/2),
 * angle = pos * theta^(-2i/n_rot), computed in double and rounded to float. */
void sprig_rope(float *x, const int32_t *pos, int n, int n_head, int hd, int n_rot, float theta, int mode);

/* out[i] = silu(gate[i]) * up[i] */
void sprig_swiglu(float *out, const float *gate, const float *up, int64_t n);

/* y[i] += x[i] */
void sprig_add_inplace(float *y, const float *x, int64_t n);

/* index of the largest value (first one on ties) */
int sprig_argmax(const float *x, int n);

#endif
