//! description = """The multi-stage cp.async pipeline of NVIDIA's globalToShmemAsyncCopy GEMM sample, reduced: 4 stages, 6 k-tiles of 64 words, 64 threads; each thread reads 8 words of the stage that other threads copied. Fixed: a __syncthreads() between the reads of stage s and the cp.async that refills it with tile k+4."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "a"
//! bytes = 1536
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [42624, 42840, 43056, 43272, 43488, 43704, 43920, 44136, 41280, 41496, 41712, 41928, 42144, 42360, 42576, 42792, 40320, 40536, 40752, 40968, 41184, 41400, 41616, 41832, 39744, 39960, 40176, 40392, 40608, 40824, 41040, 41256, 39552, 39768, 39984, 40200, 40416, 40632, 40848, 41064, 39744, 39960, 40176, 40392, 40608, 40824, 41040, 41256, 40320, 40536, 40752, 40968, 41184, 41400, 41616, 41832, 41280, 41496, 41712, 41928, 42144, 42360, 42576, 42792]
//! [[param]]
//! name = "gemm_stages_param_0"
//! buffer = "a"
//! [[param]]
//! name = "gemm_stages_param_1"
//! buffer = "out"
#include <cstdint>

// The PTX each step needs, as macros so that nvcc's .loc names the line that uses them.
#define SMEM(p) ((unsigned)__cvta_generic_to_shared(p))
#define CP_ASYNC4(dst, src) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(SMEM(dst)), "l"(src) : "memory")
#define CP_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define CP_WAIT(n) asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory")
#define MBAR_INIT(b, n) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SMEM(b)), "r"(n) : "memory")
#define MBAR_ARRIVE(b) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(SMEM(b)) : "memory")
#define MBAR_ARRIVE_TX(b, tx) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SMEM(b)), "r"(tx) : "memory")
#define MBAR_WAIT(b, par) do { unsigned ok_; do { asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok_) : "r"(SMEM(b)), "r"(par) : "memory"); } while (!ok_); } while (0)

constexpr int STAGES = 4, TILE = 64, KTILES = 6;

extern "C" __global__ void gemm_stages(const unsigned* a, unsigned* out)
{
  __shared__ unsigned buf[STAGES][TILE];
  const int t = threadIdx.x;
  unsigned acc = 0;
  // Prologue: tiles 0..STAGES-1, one commit group each.
  for (int s = 0; s < STAGES; ++s) {
    CP_ASYNC4(&buf[s][t], &a[s * TILE + t]);
    CP_COMMIT();
  }
  for (int k = 0; k < KTILES; ++k) {
    CP_WAIT(STAGES - 1);  // tile k has landed (this thread's copy)
    __syncthreads();      // ... and every other thread's
    const int s = k % STAGES;
    for (int j = 0; j < 8; ++j) {
      acc += buf[s][(t + 8 * j) % TILE] * (j + 1);  // read of stage s
    }
    __syncthreads();  // every thread is done reading stage s before it is refilled
    if (k + STAGES < KTILES) {
      CP_ASYNC4(&buf[s][t], &a[(k + STAGES) * TILE + t]);  // refill stage s with tile k+4
    }
    CP_COMMIT();
  }
  out[t] = acc;
}
