//! description = """
//! A TMA round trip through the cuda::ptx tensor wrappers: a `const __grid_constant__
//! CUtensorMap` parameter (nvcc: `.param .align 64 .b8 [128]`), cp_async_bulk_tensor 2-D tile
//! loads onto an mbarrier (mbarrier_arrive_expect_tx, mbarrier_try_wait_parity), every element
//! incremented in shared memory, fence_proxy_async, then a cp_async_bulk_tensor 2-D store of the
//! box back in place with a bulk async-group (commit, wait_group). One CTA per 16 x 8 box of a
//! 32 x 16 int32 tensor; out = in + 1."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "tensor"
//! bytes = 2048
//! fill = "iota"
//! type = "u32"
//! output = true
//! [[tensormap]]
//! name = "map"
//! buffer = "tensor"
//! data_type = "int32"
//! rank = 2
//! global_dim = [32, 16]
//! global_strides = [128]
//! box_dim = [16, 8]
//! element_strides = [1, 1]
//! [[param]]
//! name = "_Z9add_tiles14CUtensorMap_st_param_0"
//! tensormap = "map"
#include <cassert>
#include <cstdint>
#include <cuda.h>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

__global__ void add_tiles(const __grid_constant__ CUtensorMap map)
{
  constexpr int W = 16, H = 8;
  __shared__ alignas(128) int32_t box[H][W];
  __shared__ alignas(8) uint64_t bar;
  const int32_t coords[2] = {int32_t(blockIdx.x % 2) * W, int32_t(blockIdx.x / 2) * H};
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, &box, &map, coords, &bar);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, sizeof(box));
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  const int y = threadIdx.x / W, x = threadIdx.x % W;
  assert(box[y][x] == (coords[1] + y) * 32 + coords[0] + x);
  box[y][x] += 1;
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, &map, coords, &box);
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
  }
  __syncthreads();
}
