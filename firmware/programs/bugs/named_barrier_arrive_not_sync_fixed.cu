//! description = """Producer/consumer hand-off through named barrier 1 (vLLM issue 26026 reduced): warps 0-1 write 64 words of shared memory and bar.arrive 1, 128; warps 2-3 must bar.sync 1, 128 before reading them. Fixed: the consumers bar.sync."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [10, 7, 16, 13, 22, 19, 28, 25, 34, 31, 40, 37, 46, 43, 52, 49, 58, 55, 64, 61, 70, 67, 76, 73, 82, 79, 88, 85, 94, 91, 100, 97, 106, 103, 112, 109, 118, 115, 124, 121, 130, 127, 136, 133, 142, 139, 148, 145, 154, 151, 160, 157, 166, 163, 172, 169, 178, 175, 184, 181, 190, 187, 196, 193]
//! [[param]]
//! name = "handoff_param_0"
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

extern "C" __global__ void handoff(unsigned* out)
{
  __shared__ unsigned data[64];
  const int t = threadIdx.x;
  if (t < 64) {
    data[t] = 3 * t + 7;
    asm volatile("bar.arrive 1, 128;" ::: "memory");  // producers: arrive and go on
  } else {
    asm volatile("bar.sync 1, 128;" ::: "memory");  // consumers: wait for the producers
    out[t - 64] = data[(t - 64) ^ 1];  // consumer read
  }
}
