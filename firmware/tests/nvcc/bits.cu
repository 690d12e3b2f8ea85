// Integer, bit and warp-shuffle intrinsics as nvcc spells them in PTX (firmware/tests/nvcc.rs).
// nvcc -arch=sm_90a -ptx -O3 bits.cu
__global__ void bits(unsigned *o, const unsigned *in, const void *p, int n) {
  unsigned t = threadIdx.x, x = in[t], y = in[t + 32], z = in[t + 64];
  o[t] = __byte_perm(x, y, z);
  o[t + 32] = (x & y) ^ (~z | x);
  o[t + 64] = __popc(x) + __clz(y) + __brev(z) + __fns(x, y, (int)z) + __ffs(x) + __popcll((unsigned long long)x << 7);
  o[t + 96] = __funnelshift_l(x, y, z) + __funnelshift_r(x, y, z) + __funnelshift_lc(x, y, z) + __funnelshift_rc(x, y, z);
  o[t + 128] = __shfl_sync(0xffffffff, x, 3) + __shfl_up_sync(0xffffffff, x, 1) + __shfl_down_sync(0xffffffff, x, 2) + __shfl_xor_sync(0xffffffff, x, 4, 16) + __shfl_sync(0x0000ffff, y, z, 8);
  o[t + 160] = __isShared(p) + 2 * __isGlobal(p) + 4 * __isLocal(p) + 8 * __isConstant(p) + 16 * __isClusterShared(p);
  o[t + 192] = ((x >> 5) & 0x3ff) | ((x & ~0xff0u) | ((y << 4) & 0xff0u));
  o[t + 224] = __dp4a(x, y, z) + __dp4a((int)x, (int)y, (int)z) + __dp2a_lo(x, y, z) + __dp2a_hi((int)x, (int)y, (int)z);
  o[t + 256] = __umulhi(x, y) + __mulhi((int)x, (int)y) + __usad(x, y, z) + __sad((int)x, (int)y, z) + __umul24(x, y);
  o[t + 288] = __reduce_add_sync(0xffffffff, x) + __reduce_max_sync(0xffffffff, (int)y) + __match_any_sync(0xffffffff, z);
  long long a = ((long long)x << 32) | y;
  o[t + 320] = (unsigned)(a % n) + (unsigned)__mul64hi(a, (long long)z);
}
