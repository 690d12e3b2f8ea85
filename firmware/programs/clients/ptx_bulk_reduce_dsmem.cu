//! description = """
//! cp.reduce.async.bulk between the shared memories of a 2-CTA cluster through cuda::ptx: each CTA
//! adds its 64 words into its peer's accumulator and takes the element-wise maximum into another,
//! completing on the peer's mbarrier (PTX 9.7.9.25.4.2)."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [64, 1, 1]
//! cluster = [2, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 512
//! fill = "random"
//! type = "s32"
//! range = [-50, 50]
//! seed = 7
//! [[buffer]]
//! name = "out"
//! bytes = 1024
//! type = "s32"
//! output = true
//! [[param]]
//! name = "_Z17bulk_reduce_dsmemPKiPi_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z17bulk_reduce_dsmemPKiPi_param_1"
//! buffer = "out"
#include <cassert>
#include <cstdint>
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;
namespace ptx = cuda::ptx;

// Bulk reductions between the shared memories of a 2-CTA cluster (cp.reduce.async.bulk
// .shared::cluster.shared::cta): each CTA adds its 64 words into its peer's `acc` and takes the
// element-wise maximum into its peer's `hi`, both completing on the peer's mbarrier.
__global__ void __cluster_dims__(2, 1, 1) bulk_reduce_dsmem(const int* in, int* out)
{
  constexpr int N = 64;
  __shared__ alignas(128) int src[N];
  __shared__ alignas(128) int acc[N];
  __shared__ alignas(128) int hi[N];
  __shared__ alignas(8) uint64_t bar;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const unsigned peer = rank ^ 1;
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    src[i] = in[rank * N + i];
    acc[i] = 1000 * (rank + 1) + i;
    hi[i] = 20 - i;
  }
  // the bulk copies read src and write acc/hi through the async proxy
  ptx::fence_proxy_async(ptx::space_shared);
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, 2 * sizeof(src));
  }
  cluster.sync();
  if (threadIdx.x == 0) {
    uint64_t* remote_bar = cluster.map_shared_rank(&bar, peer);
    ptx::cp_reduce_async_bulk(ptx::space_cluster, ptx::space_shared, ptx::op_add, cluster.map_shared_rank(acc, peer), src, sizeof(src), remote_bar);
    ptx::cp_reduce_async_bulk(ptx::space_cluster, ptx::space_shared, ptx::op_max, cluster.map_shared_rank(hi, peer), src, sizeof(src), remote_bar);
  }
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    assert(acc[i] == 1000 * (rank + 1) + i + in[peer * N + i]);
    out[rank * 2 * N + i] = acc[i];
    out[rank * 2 * N + N + i] = hi[i];
  }
  // the peer reads our src until its copy completes: nobody leaves before both are done
  cluster.sync();
}
