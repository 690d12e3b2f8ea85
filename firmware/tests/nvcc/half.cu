// f16, bf16, packed and fp8 arithmetic and conversions (firmware/tests/nvcc.rs).
// nvcc -arch=sm_90a -ptx -O3 half.cu
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
__global__ void hf(__half *h, __nv_bfloat16 *b, __half2 *h2, __nv_bfloat162 *b2, float *f, unsigned char *q, unsigned short *q2) {
  unsigned t = threadIdx.x;
  __half x = h[t], y = h[t + 32], z = h[t + 64];
  h[t] = __hfma(x, y, z) + __hadd(x, y) * __hsub(x, z) + __hneg(__habs(x)) + __hmin(x, y) + __hmax(x, z) + __hmin_nan(x, y) + __hmax_nan(y, z) + __hfma_relu(x, y, z) + __hadd_sat(x, y) + __hmul_sat(y, z) + __hfma_sat(x, y, z) + __hdiv(x, y);
  h[t + 32] = hsqrt(x) + hexp2(y) + hlog2(z) + hsin(x) + hcos(y) + hrsqrt(z) + hrcp(x) + htanh_approx(y) + hexp(x) + __hadd_rn(x, y) + __hmul_rn(x, z);
  __half2 p = h2[t], r = h2[t + 32], s = h2[t + 64];
  h2[t] = __hfma2(p, r, s) + __hadd2(p, r) * __hsub2(r, s) + __hneg2(__habs2(p)) + __hmin2(p, r) + __hmax2_nan(r, s) + __hfma2_relu(p, r, s) + __hmul2_sat(p, r) + h2exp2(s) + h2sqrt(p) + h2tanh_approx(r);
  __nv_bfloat16 u = b[t], v = b[t + 32], w = b[t + 64];
  b[t] = __hfma(u, v, w) + __hadd(u, v) * __hsub(u, w) + __hneg(__habs(u)) + __hmin(u, v) + __hmax_nan(v, w) + __hfma_relu(u, v, w) + hexp2(u) + htanh_approx(v) + __hdiv(u, w);
  __nv_bfloat162 m = b2[t], n2 = b2[t + 32];
  b2[t] = __hfma2(m, n2, m) + __hmul2(m, n2) + __hmax2(m, n2) + __habs2(n2);
  float a = f[t], c = f[t + 32];
  h[t + 64] = __float2half_rn(a) + __float2half_rz(c) + __float2half_rd(a) + __float2half_ru(c) + __int2half_rn((int)a) + __uint2half_rz((unsigned)c) + __short2half_rd((short)a) + __double2half((double)c);
  b[t + 32] = __float2bfloat16_rn(a) + __float2bfloat16_rz(c) + __float2bfloat16_rd(a) + __float2bfloat16_ru(c) + __int2bfloat16_rn((int)a) + __double2bfloat16((double)c);
  h2[t + 32] = __floats2half2_rn(a, c) + __float22half2_rn(make_float2(c, a)) + __halves2half2(x, y);
  b2[t + 32] = __floats2bfloat162_rn(a, c) + __float22bfloat162_rn(make_float2(c, a));
  f[t + 64] = __half2float(x) + __bfloat162float(u) + __low2float(p) + __high2float(r) + (float)__half2int_rz(y) + (float)__bfloat162int_rn(v) + __half2float(__float2half_rn(c));
  __nv_fp8x2_e4m3 e4(make_float2(a, c));
  __nv_fp8x2_e5m2 e5(make_float2(c, a));
  __nv_fp8_e4m3 s4(a);
  __nv_fp8_e5m2 s5(c);
  q[t] = *(unsigned char *)&s4 + *(unsigned char *)&s5;
  q2[t] = *(unsigned short *)&e4 + *(unsigned short *)&e5 + (unsigned short)__nv_cvt_halfraw2_to_fp8x2(*(__half2_raw *)&p, __NV_SATFINITE, __NV_E4M3) + (unsigned short)__nv_cvt_bfloat16raw2_to_fp8x2(*(__nv_bfloat162_raw *)&m, __NV_SATFINITE, __NV_E5M2);
  __half2_raw back = __nv_cvt_fp8x2_to_halfraw2(*(__nv_fp8x2_storage_t *)&e4, __NV_E4M3);
  __half2_raw back5 = __nv_cvt_fp8x2_to_halfraw2(*(__nv_fp8x2_storage_t *)&e5, __NV_E5M2);
  h2[t + 64] = __hadd2(*(__half2 *)&back, *(__half2 *)&back5);
  f[t + 96] = (float)s4 + (float)s5;
  h[t + 96] = __hge(x, y) ? x : __hlt(y, z) ? y : __hisnan(z) ? z : __hequ(x, z) ? x : z;
  h2[t + 96] = __hgt2(p, r) + __hle2(r, s);
}
