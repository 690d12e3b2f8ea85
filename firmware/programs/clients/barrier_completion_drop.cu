//! description = """
//! cuda::barrier with a completion function (libcu++'s generic barrier: atomics, nanosleep backoff)
//! and arrive_and_drop: 128 threads sum into shared memory for 4 phases, the completion records
//! each phase's sum; then half the threads drop out and 64 run 2 more phases with split
//! arrive/wait."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 24
//! type = "s32"
//! output = true
//! [[param]]
//! name = "_Z18barrier_completionPi_param_0"
//! buffer = "out"
#include <cassert>
#include <cuda/barrier>

// cuda::barrier with a completion function (run by the last thread to arrive, once per phase)
// and arrive_and_drop: 128 threads accumulate into a shared sum for 4 phases, the completion
// records and clears it; then the upper half drops out and the lower 64 threads run 2 more phases.
struct Record {
  int* sum;
  int* out;
  int* phase;
  __device__ void operator()() noexcept
  {
    out[*phase] = *sum;
    *sum = 0;
    ++*phase;
  }
};

__global__ void barrier_completion(int* out)
{
  __shared__ int sum;
  __shared__ int phase;
  __shared__ cuda::barrier<cuda::thread_scope_block, Record> bar;
  if (threadIdx.x == 0) {
    sum = 0;
    phase = 0;
    init(&bar, blockDim.x, Record{&sum, out, &phase});
  }
  __syncthreads();
  for (int p = 0; p < 4; ++p) {
    atomicAdd(&sum, (threadIdx.x + 1) * (p + 1));
    bar.arrive_and_wait();
  }
  if (threadIdx.x >= 64) {
    bar.arrive_and_drop();
    return;
  }
  for (int p = 4; p < 6; ++p) {
    atomicAdd(&sum, (threadIdx.x + 1) * (p + 1));
    auto token = bar.arrive();
    bar.wait(std::move(token));
  }
  assert(phase == 6);
}
