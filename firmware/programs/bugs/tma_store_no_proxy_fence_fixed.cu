//! description = """Generic-proxy shared-memory writes stored to global memory by a bulk (TMA) copy (FlashKDA issue 24 reduced): 64 threads write a 256-byte tile, __syncthreads(), thread 0 issues cp.async.bulk.global.shared::cta and waits for its bulk group. Fixed: every writing thread executes fence.proxy.async.shared::cta before the barrier (PTX 9.7.13.4)."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51, 56, 61, 66, 71, 76, 81, 86, 91, 96, 101, 106, 111, 116, 121, 126, 131, 136, 141, 146, 151, 156, 161, 166, 171, 176, 181, 186, 191, 196, 201, 206, 211, 216, 221, 226, 231, 236, 241, 246, 251, 256, 261, 266, 271, 276, 281, 286, 291, 296, 301, 306, 311, 316]
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
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> async proxy
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(out), "r"(SMEM(tile)) : "memory");  // bulk store
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}
