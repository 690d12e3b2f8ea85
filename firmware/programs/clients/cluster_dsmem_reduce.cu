//! description = """
//! Thread block clusters through cooperative_groups (cluster.sync, map_shared_rank,
//! block_rank) and the cuda::ptx cluster barrier wrappers: 4 CTAs of a cluster each publish
//! 32 values in shared memory; after the cluster barrier, CTA r sums CTA (r+1)%4's values
//! through distributed shared memory; out[r] = that sum; asserts check every remote read."""
//! [launch]
//! grid = [4, 1, 1]
//! block = [32, 1, 1]
//! cluster = [4, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 16
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z6reducePj_param_0"
//! buffer = "out"
#include <cassert>
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;

__global__ void __cluster_dims__(4, 1, 1) reduce(unsigned* out)
{
  __shared__ unsigned vals[32];
  __shared__ unsigned total;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  vals[threadIdx.x] = rank * 1000 + threadIdx.x;
  if (threadIdx.x == 0) total = 0;
  cluster.sync();
  const unsigned peer = (rank + 1) % cluster.num_blocks();
  unsigned* remote = cluster.map_shared_rank(vals, peer);
  const unsigned v = remote[threadIdx.x];
  assert(v == peer * 1000 + threadIdx.x);
  atomicAdd(&total, v);
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
  cuda::ptx::barrier_cluster_wait();
  if (threadIdx.x == 0) out[rank] = total;
}
