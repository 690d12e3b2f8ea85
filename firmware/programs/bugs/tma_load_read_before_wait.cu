// expect-finding: TmaReadBeforeComplete
//! description = """A bulk (TMA) load into shared memory completing on an mbarrier (DeepEP issue 642 reduced): thread 0 arms the mbarrier with arrive.expect_tx and issues cp.async.bulk of 256 bytes; warp 1 reads the buffer. Bug: warp 1 reads the buffer without waiting on the mbarrier, while the copy may still be writing it. Expected: TmaReadBeforeComplete at the read (a SharedMemoryRace telling the reader to wait for the copy when the read runs before the copy's issue, or after it landed but before its phase was waited for)."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 256
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 128
//! type = "u32"
//! output = true
//! [[param]]
//! name = "tma_load_param_0"
//! buffer = "in"
//! [[param]]
//! name = "tma_load_param_1"
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

extern "C" __global__ void tma_load(const unsigned* in, unsigned* out)
{
  __shared__ alignas(128) unsigned buf[64];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    MBAR_INIT(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    MBAR_ARRIVE_TX(&bar, 256);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];" ::"r"(SMEM(buf)), "l"(in), "r"(SMEM(&bar)) : "memory");
  }
  if (threadIdx.x >= 32) {
    out[threadIdx.x - 32] = buf[threadIdx.x - 32];  // generic read of the copy's destination // expect-line
  }
}
