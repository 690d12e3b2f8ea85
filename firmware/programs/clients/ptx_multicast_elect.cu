//! description = """
//! cp.async.bulk multicast through cuda::ptx (sm_90a): in a 2-CTA cluster, CTA rank 0's elected
//! lane (cuda::ptx::elect_sync) loads 512 bytes once and multicasts them to both CTAs
//! (ctaMask 0b11), completing on each CTA's own mbarrier; each CTA announces the bytes it
//! expects, the cluster barrier orders every mbarrier init before the copy, and each CTA writes
//! in[i] * (rank + 1). Then griddepcontrol (cudaTriggerProgrammaticLaunchCompletion) and
//! cudaGridDependencySynchronize, which are no-ops without a dependent launch."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
//! cluster = [2, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 512
//! fill = "iota"
//! type = "u32"
//! start = 5
//! [[buffer]]
//! name = "out"
//! bytes = 1024
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z9multicastPKjPj_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z9multicastPKjPj_param_1"
//! buffer = "out"
#include <cassert>
#include <cstdint>
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

__global__ void __cluster_dims__(2, 1, 1) multicast(const unsigned* in, unsigned* out)
{
  constexpr int N = 128;
  __shared__ alignas(128) unsigned tile[N];
  __shared__ alignas(8) uint64_t bar;
  cudaGridDependencySynchronize();
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, sizeof(tile));
  }
  cluster.sync();
  if (rank == 0 && threadIdx.x < 32 && ptx::elect_sync(0xffffffff)) {
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, tile, in, sizeof(tile), &bar, uint16_t(0b11));
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    assert(tile[i] == 5 + i);
    out[rank * N + i] = tile[i] * (rank + 1);
  }
  cudaTriggerProgrammaticLaunchCompletion();
  // the peer's copy into this CTA's shared memory is done once this CTA's barrier completed;
  // keep both CTAs alive until both have read their tile
  cluster.sync();
}
