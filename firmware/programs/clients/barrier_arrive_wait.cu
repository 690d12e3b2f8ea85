//! description = """
//! cuda::barrier<thread_scope_block> (libcu++): a split arrive/wait phase per round. Each of
//! 128 threads adds its value into shared memory, arrives, does independent work, waits, and
//! thread 0 checks the round's sum with assert; out[r] = the sum of round r."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 16
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z6roundsPj_param_0"
//! buffer = "out"
#include <cassert>
#include <cuda/barrier>

__global__ void rounds(unsigned* out)
{
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ unsigned acc[4];
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    for (int r = 0; r < 4; ++r) acc[r] = 0;
  }
  __syncthreads();
  for (int r = 0; r < 4; ++r) {
    atomicAdd(&acc[r], threadIdx.x * (r + 1));
    auto token = bar.arrive();
    unsigned local = threadIdx.x ^ r;  // independent work between arrive and wait
    bar.wait(cuda::std::move(token));
    if (threadIdx.x == 0) {
      assert(acc[r] == (r + 1) * (127u * 128u / 2u));
      out[r] = acc[r] + (local & 0);
    }
  }
}
