//! description = """State tokens of an mbarrier that completes every time the 64 threads arrive: round 1 arrives (token t1, phase 0), round 2 arrives (token t2, phase 1); then every thread polls try_wait with a token. Fixed: they wait with t2, the token of the phase they last arrived in."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
//! [[param]]
//! name = "tokens_param_0"
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

#define ARRIVE_TOKEN(b, tok) asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(tok) : "r"(SMEM(b)) : "memory")
#define TRY_WAIT_TOKEN(b, tok, ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(SMEM(b)), "l"(tok) : "memory")

extern "C" __global__ void tokens(unsigned* out)
{
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) MBAR_INIT(&bar, 64);
  __syncthreads();
  uint64_t t1, t2;
  unsigned ok = 0;
  ARRIVE_TOKEN(&bar, t1);  // phase 0
  do { TRY_WAIT_TOKEN(&bar, t1, ok); } while (!ok);
  ARRIVE_TOKEN(&bar, t2);  // phase 1
  do { TRY_WAIT_TOKEN(&bar, t2, ok); } while (!ok);
  ok = 0;
  do { TRY_WAIT_TOKEN(&bar, t2, ok); } while (!ok);  // wait with a token
  out[threadIdx.x] = ok;
}
