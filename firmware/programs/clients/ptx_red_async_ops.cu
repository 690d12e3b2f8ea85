//! description = """
//! cuda::ptx::red_async with every operation but add (inc, dec, max, min, or, and) from each lane
//! of a 4-CTA cluster's first warp into its right neighbour's counters, each completing 4 bytes
//! on the neighbour's mbarrier (PTX 9.7.13.7)."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [64, 1, 1]
//! cluster = [4, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 96
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z13red_async_opsPj_param_0"
//! buffer = "out"
#include <cassert>
#include <cstdint>
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

// Every CTA of a 4-CTA cluster owns six counters and an mbarrier; the first warp of each CTA
// sends its lanes' values into its right neighbour's counters with red.async (one operation per
// counter and lane), each completing 4 bytes on the neighbour's mbarrier.
__global__ void __cluster_dims__(4, 1, 1) red_async_ops(uint32_t* out)
{
  __shared__ uint32_t counters[6];
  __shared__ alignas(8) uint64_t bar;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const unsigned lane = threadIdx.x;
  if (threadIdx.x == 0) {
    counters[0] = 0;          // inc (wraps at 1000)
    counters[1] = 5000;       // dec (wraps at 10000)
    counters[2] = 0;          // max
    counters[3] = 0xffffffff; // min
    counters[4] = 0;          // or
    counters[5] = 0xffffffff; // and
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, 6 * 32 * sizeof(uint32_t));
  }
  cluster.sync();
  const unsigned right = (rank + 1) % 4;
  uint32_t* remote = cluster.map_shared_rank(counters, right);
  uint64_t* remote_bar = cluster.map_shared_rank(&bar, right);
  if (threadIdx.x < 32) {
    const uint32_t v = lane * 7 + rank;
    ptx::red_async(ptx::op_inc, &remote[0], 1000u, remote_bar);
    ptx::red_async(ptx::op_dec, &remote[1], 10000u, remote_bar);
    ptx::red_async(ptx::op_max, &remote[2], v, remote_bar);
    ptx::red_async(ptx::op_min, &remote[3], v, remote_bar);
    ptx::red_async(ptx::op_or_op, &remote[4], 1u << lane, remote_bar);
    ptx::red_async(ptx::op_and_op, &remote[5], ~(1u << (lane % 8)), remote_bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  if (threadIdx.x < 6) {
    out[rank * 6 + threadIdx.x] = counters[threadIdx.x];
  }
  assert(counters[0] == 32);
  cluster.sync();
}
