/*
 * tensor/ops — the row-wise operations of a transformer layer, plain C with
 * SIMD where it pays. Every op treats rows independently, so a row's result
 * never depends on the batch around it (see matmul.h for why).
 *
 * Shapes: x is [n][dim] row-major unless stated.
 *
 * Exactness: the SIMD variants (chosen once from CPUID; SPRIG_NO_SIMD=1 forces
 * plain C) compute the same bits as the plain-C code, so a run with and
 * without SIMD produces the same tokens.
 */
#ifndef SPRIG_TENSOR_OPS_H
#define SPRIG_TENSOR_OPS_H

#include <stdbool.h>
#include <stdint.h>

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w   (out may alias x).
 * The sum of squares is accumulated in double; the scale is rounded to float
 * and applied as (x * scale) * w. */
void sprig_rmsnorm(float *out, const float *x, const float *w, int n, int dim, float eps);

enum sprig_rope_mode { SPRIG_ROPE_NORM = 0, SPRIG_ROPE_NEOX = 1 };

/* Rotate the first n_rot dims of every head of x[n][n_head*hd] in place at
 * positions pos[n]: NORM pairs (2i, 2i+1), NEOX pairs (i, i + n_rot/2),
 * angle = pos * theta^(-2i/n_rot), computed in double and rounded to float;
 * then x0' = x0*c - x1*s, x1' = x0*s + x1*c in float (no fma).
 * n_rot must be even and <= hd (an odd or larger n_rot is clamped down). */
void sprig_rope(float *x, const int32_t *pos, int n, int n_head, int hd, int n_rot, float theta, int mode);

/* The same rotation in two steps, for a forward that rotates q and k of
 * every layer at the same positions: sprig_rope_table computes the cos/sin of
 * each position once (exactly as sprig_rope does: angle and cos/sin in
 * double, rounded to float) into cs[n][n_rot/2][2] (cos, sin) — at most n*hd
 * floats; sprig_rope_apply rotates x[n][n_head*hd] with it. Both clamp n_rot
 * like sprig_rope, and pass the same n, hd and n_rot: apply(table(pos)) gives
 * the bits of sprig_rope(pos). */
void sprig_rope_table(float *cs, const int32_t *pos, int n, int hd, int n_rot, float theta);
void sprig_rope_apply(float *x, const float *cs, int n, int n_head, int hd, int n_rot, int mode);

/* sprig_rope_table with RoPE scaling: angle_i = pos * theta^(-2i/n_rot) *
 * freq_scale / factors[i] (in double). freq_scale is 1/factor of linear
 * scaling (1 = none); factors[n_rot/2] are per-pair frequency divisors (the
 * rope_freqs tensor of Llama 3 files) or NULL. freq_scale 1 and NULL factors
 * give exactly sprig_rope_table's bits. */
void sprig_rope_table_scaled(float *cs, const int32_t *pos, int n, int hd, int n_rot, float theta, float freq_scale,
                             const float *factors);

/* out[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) * up  (out may alias gate or up) */
void sprig_swiglu(float *out, const float *gate, const float *up, int64_t n);
/* out = gelu(gate) * up, GELU's tanh approximation (Gemma's FFN) as
 * llama.cpp's CPU backend computes it: gate rounded to f16 and looked up in
 * a table of f16(0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))) over
 * every f16 x; 0 for gate <= -10, gate itself for gate >= 10. The table
 * is the spec (its error, ~2^-11 relative, is what llama.cpp runs; a
 * spiky attention — gemma4's unscaled queries — amplifies any other choice
 * into different tokens). (out may alias gate or up.) */
void sprig_geglu(float *out, const float *gate, const float *up, int64_t n);

/* y[i] += x[i] */
void sprig_add_inplace(float *y, const float *x, int64_t n);

/* index of the largest value (first one on ties; NaN is never the largest;
 * 0 when every value is NaN; -1 when n <= 0) */
int sprig_argmax(const float *x, int n);

/* The engine's float exponential (softmax, silu): Cody-Waite reduction by
 * ln 2 and a degree-6 polynomial, < 2 ulp; exactly 0 for x < -87, x clamped
 * to 88 above. Every SIMD kernel computes the same bits lane by lane. */
float sprig_expf_poly(float x);

/* Which kernels the ops run: "avx512", "avx2" (SwiGLU in AVX2, the other
 * ops in plain C) or "c"; the highest the CPU has, capped as the matmul
 * kernels are (SPRIG_KERNELS, sprig_kernels_force before the first op). */
const char *sprig_ops_kernel(void);

/* Tests and benchmarks: force "c", "avx2" or "avx512" (if the CPU has it),
 * or NULL to go back to the automatic choice. Returns false when the kernel
 * cannot run. */
bool sprig_ops_use_kernel(const char *name);

/* Internal: the AVX-512 kernels (ops-avx512.c); call the public ops instead. */
void sprig_swiglu_avx512(float *out, const float *gate, const float *up, int64_t n);
void sprig_rmsnorm_avx512(float *out, const float *x, const float *w, int n, int dim, float eps);
void sprig_rope_apply_norm_avx512(float *x, const float *cs, int n, int n_head, int hd, int n_rot);
void sprig_add_avx512(float *y, const float *x, int64_t n);
/* Internal: the AVX2 kernels (ops-avx2.c). */
void sprig_swiglu_avx2(float *out, const float *gate, const float *up, int64_t n);

#endif
