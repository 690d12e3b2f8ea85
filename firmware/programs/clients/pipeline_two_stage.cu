//! description = """
//! A two-stage cuda::pipeline (<cuda/pipeline>, thread_scope_thread, the CUDA Programming
//! Guide's pattern): each thread streams 8 batches of its own 16-byte chunk through a 2-deep
//! pipeline (producer_acquire, memcpy_async, producer_commit, consumer_wait, consumer_release)
//! and accumulates them; out[t] = the sum of its 8 chunks' words, checked by an assert."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 8192
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z6streamPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z6streamPKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cuda/pipeline>

__global__ void stream(const unsigned* in, unsigned* out)
{
  constexpr int STAGES = 2, BATCHES = 8, W = 4;
  __shared__ alignas(16) unsigned buf[STAGES][64][W];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const int t = threadIdx.x;
  auto chunk = [&](int k) { return in + (k * 64 + t) * W; };
  for (int s = 0; s < STAGES; ++s) {
    pipe.producer_acquire();
    cuda::memcpy_async(buf[s][t], chunk(s), cuda::aligned_size_t<16>(W * sizeof(unsigned)), pipe);
    pipe.producer_commit();
  }
  unsigned sum = 0;
  for (int k = 0; k < BATCHES; ++k) {
    cuda::pipeline_consumer_wait_prior<STAGES - 1>(pipe);
    const int s = k % STAGES;
    for (int j = 0; j < W; ++j) {
      assert(buf[s][t][j] == (k * 64 + t) * W + j);
      sum += buf[s][t][j];
    }
    pipe.consumer_release();
    pipe.producer_acquire();
    if (k + STAGES < BATCHES) {
      cuda::memcpy_async(buf[s][t], chunk(k + STAGES), cuda::aligned_size_t<16>(W * sizeof(unsigned)), pipe);
    }
    pipe.producer_commit();
  }
  out[t] = sum;
}
