// f32 / f64 special functions, rounding intrinsics and conversions (firmware/tests/nvcc.rs).
// nvcc -arch=sm_90a -ptx -O3 float.cu ; float_fast.ptx adds --use_fast_math
__global__ void fl(float *f, double *d, int *i, unsigned *u, long long *l) {
  unsigned t = threadIdx.x;
  float a = f[t], b = f[t + 32], c = f[t + 64];
  f[t] = sqrtf(a) + rsqrtf(a) + __frcp_rn(a) + __frcp_rz(a) + __frcp_rd(a) + __frcp_ru(a) + exp2f(b) + __log2f(a) + __sinf(a) + __cosf(a) + tanhf(c);
  f[t + 32] = __fsqrt_rn(a) + __fsqrt_rz(a) + __fsqrt_rd(a) + __fsqrt_ru(a) + __fdividef(a, b) + __fdiv_rn(a, b) + __fdiv_rz(a, b) + __fdiv_rd(a, b) + __fdiv_ru(a, b);
  f[t + 64] = __fmaf_rn(a, b, c) + __fmaf_rz(a, b, c) + __fmaf_rd(a, b, c) + __fmaf_ru(a, b, c) + __fadd_rz(a, b) + __fadd_rd(a, b) + __fadd_ru(a, b) + __fmul_rz(a, b) + __fmul_ru(a, b) + __fsub_rd(a, b);
  f[t + 96] = fminf(a, b) + fmaxf(a, c) + fabsf(a) + copysignf(a, b) + __saturatef(a) + __expf(b) + __powf(a, b) + rintf(a) + truncf(b) + floorf(c) + ceilf(a);
  double x = d[t], y = d[t + 32];
  d[t] = sqrt(x) + rsqrt(x) + __drcp_rn(x) + __drcp_rz(x) + __dsqrt_rd(x) + __dsqrt_ru(x) + __dadd_ru(x, y) + __dmul_rz(x, y) + __fma_rd(x, y, x) + __ddiv_rz(x, y) + fmin(x, y) + copysign(x, y);
  i[t] = __float2int_rn(a) + __float2int_rz(b) + __float2int_rd(c) + __float2int_ru(a) + __double2int_rz(x) + __double2int_rn(y);
  u[t] = __float2uint_rn(a) + __float2uint_rz(b) + __float2uint_ru(c) + __double2uint_rd(x) + __float_as_uint(__int2float_rz((int)u[t + 32])) + __float_as_uint(__uint2float_rd(u[t + 64]));
  l[t] = __float2ll_rn(a) + __double2ll_rz(x) + (long long)__ll2float_rd(l[t + 32]) + (long long)__ull2double_ru(l[t + 64]);
  f[t + 128] = __double2float_rn(x) + __double2float_rz(y) + __double2float_rd(x) + __double2float_ru(y) + __int2float_rn((int)x) + __uint2float_ru((unsigned)y);
  d[t + 32] = __int2double_rn((int)a) + __uint2double_rn((unsigned)b) + __ll2double_rd(l[t]) + (double)a;
}
