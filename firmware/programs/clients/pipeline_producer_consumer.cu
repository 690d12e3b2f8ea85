//! description = """
//! cuda::pipeline<thread_scope_block> with producer and consumer roles (libcu++): warp 0
//! produces 4-stage memcpy_async copies of 8 batches of 128 floats, warps 1-2 consume them
//! (sum of each batch into out[b]); asserts check the stages' data."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [96, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 4096
//! fill = "iota"
//! type = "f32"
//! [[buffer]]
//! name = "out"
//! bytes = 32
//! type = "f32"
//! output = true
//! [[param]]
//! name = "_Z4pipePKfPf_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z4pipePKfPf_param_1"
//! buffer = "out"
#include <cassert>
#include <cooperative_groups.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

__global__ void pipe(const float* in, float* out)
{
  constexpr int stages = 4, batch = 128, batches = 8;
  __shared__ float buf[stages][batch];
  __shared__ float partial[batches];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
  auto block = cg::this_thread_block();
  const bool producer = threadIdx.x < 32;
  auto role = producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
  auto pipe = cuda::make_pipeline(block, &state, role);
  if (threadIdx.x < batches) partial[threadIdx.x] = 0.0f;
  block.sync();
  for (int b = 0; b < batches; ++b) {
    const int s = b % stages;
    if (producer) {
      pipe.producer_acquire();
      for (int i = threadIdx.x; i < batch; i += 32) {
        cuda::memcpy_async(&buf[s][i], &in[b * batch + i], sizeof(float), pipe);
      }
      pipe.producer_commit();
    } else {
      pipe.consumer_wait();
      const int c = threadIdx.x - 32;
      float sum = 0.0f;
      for (int i = c; i < batch; i += 64) {
        assert(buf[s][i] == float(b * batch + i));
        sum += buf[s][i];
      }
      atomicAdd(&partial[b], sum);
      pipe.consumer_release();
    }
  }
  block.sync();
  if (threadIdx.x < batches) out[threadIdx.x] = partial[threadIdx.x];
}
