//! description = """
//! cuda::barrier with transaction counts (libcu++ <cuda/barrier>, sm_90): thread 0 starts a bulk
//! copy with cuda::device::memcpy_async_tx and announces its bytes with
//! cuda::device::barrier_arrive_tx, the others arrive with barrier.arrive(); everyone waits on the
//! token; the tile is reversed into out. An assert checks every element."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 2048
//! fill = "iota"
//! type = "u32"
//! [[buffer]]
//! name = "out"
//! bytes = 2048
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z7reversePKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z7reversePKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cuda/barrier>
#include <cuda/ptx>
#include <utility>

using barrier = cuda::barrier<cuda::thread_scope_block>;

__global__ void reverse(const unsigned* in, unsigned* out)
{
  constexpr int N = 256;
  __shared__ alignas(16) unsigned tile[N];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  barrier::arrival_token token;
  if (threadIdx.x == 0) {
    cuda::device::memcpy_async_tx(tile, in + blockIdx.x * N, cuda::aligned_size_t<16>(sizeof(tile)), bar);
    token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    assert(tile[N - 1 - i] == blockIdx.x * N + N - 1 - i);
    out[blockIdx.x * N + i] = tile[N - 1 - i];
  }
}
