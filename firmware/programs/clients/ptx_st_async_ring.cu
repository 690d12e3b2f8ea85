//! description = """
//! The cuda::ptx remote-store wrappers in a 4-CTA cluster ring: each CTA's thread 0 st_async's
//! a 2 x u32 vector and a u64 into its right neighbour's shared memory, and red_async adds into
//! the neighbour's counter, all completing transaction bytes on the neighbour's mbarrier
//! (mbarrier_init, fence_mbarrier_init, mbarrier_arrive_expect_tx, mbarrier_try_wait_parity);
//! the addresses come from cooperative_groups' map_shared_rank (mapa) and the cluster barrier orders the init
//! before any remote store. out[4 r ..] = what CTA r received."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [32, 1, 1]
//! cluster = [4, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 64
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z4ringPj_param_0"
//! buffer = "out"
#include <cassert>
#include <cstdint>
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

__global__ void __cluster_dims__(4, 1, 1) ring(unsigned* out)
{
  __shared__ alignas(16) uint32_t pair[2];
  __shared__ alignas(8) uint64_t wide;
  __shared__ alignas(8) uint32_t counter;
  __shared__ alignas(8) uint64_t bar;
  const uint32_t rank = ptx::get_sreg_cluster_ctarank();
  const uint32_t right = (rank + 1) % ptx::get_sreg_cluster_nctarank();
  if (threadIdx.x == 0) {
    counter = 100;
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    // 8 + 8 + 4 bytes will land here
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, 20);
  }
  ptx::barrier_cluster_arrive(ptx::sem_release);
  ptx::barrier_cluster_wait();
  if (threadIdx.x == 0) {
    cg::cluster_group cluster = cg::this_cluster();
    uint32_t* r_pair = cluster.map_shared_rank(pair, right);
    uint64_t* r_wide = cluster.map_shared_rank(&wide, right);
    uint32_t* r_counter = cluster.map_shared_rank(&counter, right);
    uint64_t* r_bar = cluster.map_shared_rank(&bar, right);
    const uint32_t v[2] = {10 * rank + 1, 10 * rank + 2};
    ptx::st_async(r_pair, v, r_bar);
    ptx::st_async(r_wide, uint64_t(rank) << 32 | 7u, r_bar);
    ptx::red_async(ptx::op_add_t{}, r_counter, uint32_t(rank + 1), r_bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  const uint32_t left = (rank + 3) % 4;
  assert(pair[0] == 10 * left + 1 && pair[1] == 10 * left + 2);
  if (threadIdx.x == 0) {
    out[4 * rank + 0] = pair[0];
    out[4 * rank + 1] = pair[1];
    out[4 * rank + 2] = uint32_t(wide >> 32) * 1000 + uint32_t(wide);
    out[4 * rank + 3] = counter;
  }
  // no CTA may exit while a neighbour can still store into its shared memory
  ptx::barrier_cluster_arrive(ptx::sem_release);
  ptx::barrier_cluster_wait();
}
