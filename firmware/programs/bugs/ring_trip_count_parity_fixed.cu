//! description = """A 2-stage producer/consumer ring over N = 9 items in tiles of 2 (tilelang issue 2567 shows such a length-dependent hang): warp 0 produces, warp 1 consumes; full[s]/empty[s] mbarriers, parity (k / 2) & 1. Fixed: both sides count tiles as ceil(N / 2)."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 64
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 128
//! type = "u32"
//! output = true
//! expect = [20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16, 20, 16]
//! [[param]]
//! name = "ring_param_0"
//! buffer = "in"
//! [[param]]
//! name = "ring_param_1"
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

constexpr int STAGES = 2, TILE = 2, N = 9;

extern "C" __global__ void ring(const unsigned* in, unsigned* out)
{
  __shared__ unsigned buf[STAGES][TILE];
  __shared__ uint64_t full[STAGES], empty[STAGES];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      MBAR_INIT(&full[s], 1);
      MBAR_INIT(&empty[s], 1);
    }
  }
  __syncthreads();
  if (warp == 0) {
    const int tiles = (N + 1) / 2;  // producer's trip count
    for (int k = 0; k < tiles; ++k) {
      const int s = k % STAGES;
      if (k >= STAGES) MBAR_WAIT(&empty[s], ((k / STAGES) - 1) & 1);
      if (lane < TILE) buf[s][lane] = TILE * k + lane < N ? in[TILE * k + lane] : 0;
      __syncwarp();
      if (lane == 0) MBAR_ARRIVE(&full[s]);
    }
  } else {
    const int tiles = (N + TILE - 1) / TILE;  // consumer's trip count
    unsigned acc = 0;
    for (int k = 0; k < tiles; ++k) {
      const int s = k % STAGES;
      MBAR_WAIT(&full[s], (k / STAGES) & 1);  // consumer wait
      acc += buf[s][lane % TILE];
      __syncwarp();
      if (lane == 0) MBAR_ARRIVE(&empty[s]);
    }
    out[lane] = acc;
  }
}
