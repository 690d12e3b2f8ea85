// expect-finding: Deadlock
//! description = """A warp-specialized pipeline (CUTLASS issue 2418 reduced): warp 0 produces 4 tiles of 32 words through a 2-stage ring of full/empty mbarriers, warps 1-2 consume. Bug: full[] is initialized with 2 arrivals (as if two producer warps arrived) but only the producer's lane 0 arrives, so full[0] never completes: every consumer warp waits on it forever and the producer waits on empty[0] for the consumers. Expected: Deadlock whose wait-for graph names full[0] (pending 1 of 2 arrivals) and the producer, blocked on empty[], as the only warp that ever arrived on it."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [96, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! [[param]]
//! name = "ws_param_0"
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

constexpr int STAGES = 2, TILES = 4, PRODUCERS = 2;

extern "C" __global__ void ws(unsigned* out)
{
  __shared__ unsigned ring[STAGES][32];
  __shared__ uint64_t full[STAGES], empty[STAGES];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      MBAR_INIT(&full[s], PRODUCERS);  // arrivals expected per phase (2, but one producer arrives)
      MBAR_INIT(&empty[s], 2);          // the two consumer warps' lane 0
    }
  }
  __syncthreads();
  if (warp == 0) {
    for (int k = 0; k < TILES; ++k) {
      const int s = k % STAGES;
      if (k >= STAGES) MBAR_WAIT(&empty[s], ((k / STAGES) - 1) & 1);
      ring[s][lane] = 32 * k + lane;
      __syncwarp();
      if (lane == 0) MBAR_ARRIVE(&full[s]);
    }
  } else {
    unsigned acc = 0;
    for (int k = 0; k < TILES; ++k) {
      const int s = k % STAGES;
      MBAR_WAIT(&full[s], (k / STAGES) & 1);  // consumer wait // expect-line
      acc += ring[s][lane];
      __syncwarp();
      if (lane == 0) MBAR_ARRIVE(&empty[s]);
    }
    out[(warp - 1) * 32 + lane] = acc;
  }
}
