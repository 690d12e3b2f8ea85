// expect-finding: ProxyFenceMissing
//! description = """Generic-proxy shared-memory writes stored to global memory by a bulk (TMA) copy (FlashKDA issue 24 reduced): 64 threads write a 256-byte tile, __syncthreads(), thread 0 issues cp.async.bulk.global.shared::cta and waits for its bulk group. Bug: no fence.proxy.async between the generic writes and the async-proxy read of the bulk copy (PTX 8.6: the TMA may read stale data). Expected: ProxyFenceMissing at the bulk copy."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! [[param]]
//! name = "tma_store_param_0"
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

extern "C" __global__ void tma_store(unsigned* out)
{
  __shared__ alignas(128) unsigned tile[64];
  tile[threadIdx.x] = 5 * threadIdx.x + 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(out), "r"(SMEM(tile)) : "memory");  // bulk store // expect-line
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}
