//! description = """
//! A 3-stage cuda::pipeline<thread_scope_block> with partitioned roles (make_pipeline(group,
//! &state, producer_count)): warps 0-1 are producers (cuda::memcpy_async of 64-float tiles, one
//! aligned_size_t<16> copy per lane), warps 2-3 consumers (each tile scaled and written out, and
//! its sum accumulated with atomicAdd), 10 tiles so the ring wraps 3 times."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 5120
//! fill = "iota"
//! type = "f32"
//! [[buffer]]
//! name = "out"
//! bytes = 5120
//! type = "f32"
//! output = true
//! [[buffer]]
//! name = "sums"
//! bytes = 80
//! type = "f32"
//! output = true
//! [[param]]
//! name = "_Z5stagePKfPfS1__param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z5stagePKfPfS1__param_1"
//! buffer = "out"
//! [[param]]
//! name = "_Z5stagePKfPfS1__param_2"
//! buffer = "sums"
#include <cooperative_groups.h>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

constexpr int stages = 3, tile = 64, tiles_per_cta = 10;

__global__ void stage(const float* in, float* out, float* sums)
{
  __shared__ alignas(16) float ring[stages][tile];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
  auto block = cg::this_thread_block();
  const int producers = 64;  // warps 0-1
  auto pipe = cuda::make_pipeline(block, &state, producers);
  const bool producer = threadIdx.x < producers;
  const int base = blockIdx.x * tiles_per_cta;
  if (producer) {
    for (int t = 0; t < tiles_per_cta; ++t) {
      pipe.producer_acquire();
      // 16 lanes copy 16 bytes each: the tile's 64 floats.
      if (threadIdx.x < tile / 4) {
        cuda::memcpy_async(&ring[t % stages][threadIdx.x * 4], &in[(base + t) * tile + threadIdx.x * 4],
                           cuda::aligned_size_t<16>(16), pipe);
      }
      pipe.producer_commit();
    }
  } else {
    const int c = threadIdx.x - producers;  // 0..63: one element of the tile each
    for (int t = 0; t < tiles_per_cta; ++t) {
      pipe.consumer_wait();
      const float v = ring[t % stages][c];
      pipe.consumer_release();
      out[(base + t) * tile + c] = 3.0f * v + 1.0f;
      atomicAdd(&sums[base + t], v);
    }
  }
}
