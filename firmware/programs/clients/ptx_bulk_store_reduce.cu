//! description = """
//! The cuda::ptx bulk-copy wrappers in the shared -> global direction, with bulk async-groups:
//! cp_async_bulk (shared::cta -> global, bulk_group), cp_reduce_async_bulk (.add.u32 into global),
//! cp_async_bulk_commit_group, cp_async_bulk_wait_group_read and cp_async_bulk_wait_group, with
//! fence_proxy_async_shared_cta before the async proxy reads shared memory. 2 CTAs x 64 threads:
//! each CTA fills a 1 KiB tile, copies it to out and adds it into acc (pre-filled with iota)."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 2048
//! type = "u32"
//! output = true
//! [[buffer]]
//! name = "acc"
//! bytes = 2048
//! fill = "iota"
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z10store_bulkPjS__param_0"
//! buffer = "out"
//! [[param]]
//! name = "_Z10store_bulkPjS__param_1"
//! buffer = "acc"
#include <cassert>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

__global__ void store_bulk(unsigned* out, unsigned* acc)
{
  constexpr int N = 256;
  __shared__ alignas(128) unsigned tile[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    tile[i] = 3 * (blockIdx.x * N + i) + 1;
  }
  // make the generic-proxy writes visible to the async proxy (the bulk copy reads them)
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + blockIdx.x * N, tile, sizeof(tile));
    ptx::cp_reduce_async_bulk(ptx::space_global, ptx::space_shared, ptx::op_add, acc + blockIdx.x * N, tile, sizeof(tile));
    ptx::cp_async_bulk_commit_group();
    // the source may be overwritten once the group has read it ...
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());
    // ... and the writes are done once it completes
    ptx::cp_async_bulk_wait_group(ptx::n32_t<0>());
  }
  __syncthreads();
  assert(tile[threadIdx.x] == 3 * (blockIdx.x * N + threadIdx.x) + 1);
}
