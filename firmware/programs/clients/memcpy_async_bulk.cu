//! description = """
//! cuda::memcpy_async of a 16-byte-aligned block (cuda::aligned_size_t<16>) completing on a
//! cuda::barrier: on sm_90 libcu++ issues it as a bulk copy (cp.async.bulk + mbarrier tx-count).
//! 64 threads copy 1 KiB of in to shared memory, wait, double every word and write out; asserts
//! check the copy."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
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
//! name = "_Z4copyPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z4copyPKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cooperative_groups.h>
#include <cuda/barrier>

namespace cg = cooperative_groups;

__global__ void copy(const unsigned* in, unsigned* out)
{
  constexpr int N = 256;
  __shared__ alignas(16) unsigned tile[N];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    init(&bar, block.size());
  }
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * N, cuda::aligned_size_t<16>(sizeof(tile)), bar);
  bar.arrive_and_wait();
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    assert(tile[i] == blockIdx.x * N + i);
    out[blockIdx.x * N + i] = 2 * tile[i];
  }
}
