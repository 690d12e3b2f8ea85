//! description = """
//! A tiled matrix multiply (C 32x32 = A 32x96 * B 96x32, f32) staged through shared memory with
//! cuda::memcpy_async and a 4-stage per-thread cuda::pipeline, as NVIDIA's globalToShmemAsyncCopy
//! sample does (cp.async.cg 16-byte chunks, commit_group / wait_group)."""
//! [launch]
//! grid = [2, 2, 1]
//! block = [16, 16, 1]
//! [[buffer]]
//! name = "C"
//! bytes = 4096
//! type = "f32"
//! output = true
//! [[buffer]]
//! name = "A"
//! bytes = 12288
//! fill = "random"
//! type = "f32"
//! range = [-4, 4]
//! seed = 1
//! [[buffer]]
//! name = "B"
//! bytes = 12288
//! fill = "random"
//! type = "f32"
//! range = [-4, 4]
//! seed = 2
//! [[param]]
//! name = "_Z19matmul_async_stagesILi16EEvPfPKfS2_ii_param_0"
//! buffer = "C"
//! [[param]]
//! name = "_Z19matmul_async_stagesILi16EEvPfPKfS2_ii_param_1"
//! buffer = "A"
//! [[param]]
//! name = "_Z19matmul_async_stagesILi16EEvPfPKfS2_ii_param_2"
//! buffer = "B"
//! [[param]]
//! name = "_Z19matmul_async_stagesILi16EEvPfPKfS2_ii_param_3"
//! value = 96
//! [[param]]
//! name = "_Z19matmul_async_stagesILi16EEvPfPKfS2_ii_param_4"
//! value = 32
#include <cuda/pipeline>

// Tiled matrix multiply C = A * B staged through shared memory with cuda::memcpy_async and a
// multi-stage per-thread cuda::pipeline, in the style of the CUDA samples' globalToShmemAsyncCopy
// ("AsyncCopyMultiStageLargeChunk"): each thread of a 16x16 block copies 16-byte chunks of the
// next tiles of A and B while the block multiplies the current ones, 4 stages deep.
template <int BLOCK>
__global__ void matmul_async_stages(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B, int wA, int wB)
{
  constexpr int STAGES = 4;
  __shared__ alignas(alignof(float4)) float As[STAGES][BLOCK][BLOCK];
  __shared__ alignas(alignof(float4)) float Bs[STAGES][BLOCK][BLOCK];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int aBegin = wA * BLOCK * blockIdx.y;
  const int aEnd = aBegin + wA - 1;
  const int aStep = BLOCK;
  const int bBegin = BLOCK * blockIdx.x;
  const int bStep = BLOCK * wB;
  const int t4x = tx * 4;
  const auto chunk = cuda::aligned_size_t<alignof(float4)>(sizeof(float4));
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  float sum = 0.0f;
  for (int a = aBegin, b = bBegin, i = 0, aStage = aBegin, bStage = bBegin, iStage = 0; a <= aEnd; a += aStep, b += bStep, ++i) {
    // keep STAGES tiles in flight
    for (; aStage <= a + aStep * (STAGES - 1); aStage += aStep, bStage += bStep, ++iStage) {
      pipe.producer_acquire();
      if (aStage <= aEnd && t4x < BLOCK) {
        const int j = iStage % STAGES;
        cuda::memcpy_async(&As[j][ty][t4x], &A[aStage + wA * ty + t4x], chunk, pipe);
        cuda::memcpy_async(&Bs[j][ty][t4x], &B[bStage + wB * ty + t4x], chunk, pipe);
      }
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    __syncthreads();
    const int j = i % STAGES;
    for (int k = 0; k < BLOCK; ++k) {
      sum += As[j][ty][k] * Bs[j][k][tx];
    }
    pipe.consumer_release();
    __syncthreads();
  }
  C[wB * BLOCK * blockIdx.y + BLOCK * blockIdx.x + wB * ty + tx] = sum;
}

template __global__ void matmul_async_stages<16>(float*, const float*, const float*, int, int);
