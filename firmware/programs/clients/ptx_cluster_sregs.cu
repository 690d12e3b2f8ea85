//! description = """
//! The special registers of a cluster launch through cuda::ptx::get_sreg_* (grid 4x2 in 2x2
//! clusters, block 8x4x2, 64 bytes of dynamic shared memory), the lane masks, mapa + getctarank,
//! and the split cluster barrier (fence.acq_rel.cluster before a relaxed arrive)."""
//! [launch]
//! grid = [4, 2, 1]
//! block = [8, 4, 2]
//! cluster = [2, 2, 1]
//! dynamic_smem = 64
//! [[buffer]]
//! name = "ids"
//! bytes = 512
//! type = "u32"
//! output = true
//! [[buffer]]
//! name = "masks"
//! bytes = 640
//! type = "u32"
//! output = true
//! [[param]]
//! name = "_Z13cluster_sregsPjS__param_0"
//! buffer = "ids"
//! [[param]]
//! name = "_Z13cluster_sregsPjS__param_1"
//! buffer = "masks"
#include <cassert>
#include <cstdint>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

// The special registers of a cluster launch through cuda::ptx::get_sreg_* (grid 4x2 of
// clusters 2x2, block 8x4x2), the lane masks of every lane, getctarank of a mapa'd address,
// and the cluster barrier in its split form: an explicit release fence before a relaxed arrive.
__global__ void __cluster_dims__(2, 2, 1) cluster_sregs(uint32_t* ids, uint32_t* masks)
{
  extern __shared__ uint32_t dyn[];
  __shared__ uint32_t word;
  const uint32_t rank = ptx::get_sreg_cluster_ctarank();
  const uint32_t tid = ptx::get_sreg_tid_x() + ptx::get_sreg_ntid_x() * (ptx::get_sreg_tid_y() + ptx::get_sreg_ntid_y() * ptx::get_sreg_tid_z());
  const uint32_t cta = ptx::get_sreg_ctaid_x() + ptx::get_sreg_nctaid_x() * ptx::get_sreg_ctaid_y();
  if (tid == 0) {
    word = rank;
    dyn[0] = 7;
  }
  ptx::fence(ptx::sem_acq_rel, ptx::scope_cluster);
  ptx::barrier_cluster_arrive(ptx::sem_relaxed);
  ptx::barrier_cluster_wait();
  if (tid == 0) {
    uint32_t* o = ids + cta * 16;
    o[0] = ptx::get_sreg_clusterid_x();
    o[1] = ptx::get_sreg_clusterid_y();
    o[2] = ptx::get_sreg_nclusterid_x();
    o[3] = ptx::get_sreg_nclusterid_y();
    o[4] = ptx::get_sreg_cluster_ctaid_x();
    o[5] = ptx::get_sreg_cluster_ctaid_y();
    o[6] = ptx::get_sreg_cluster_nctaid_x();
    o[7] = ptx::get_sreg_cluster_nctaid_y();
    o[8] = rank;
    o[9] = ptx::get_sreg_cluster_nctarank();
    o[10] = ptx::get_sreg_is_explicit_cluster();
    o[11] = ptx::get_sreg_dynamic_smem_size();
    o[12] = ptx::get_sreg_nctaid_z() * 100 + ptx::get_sreg_ntid_z() * 10 + ptx::get_sreg_ctaid_z();
    // the word of the next rank, through mapa; getctarank names its owner
    const uint32_t next = (rank + 1) % 4;
    uint32_t* remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(&word), "r"(next));
    o[13] = *remote;
    o[14] = ptx::getctarank(ptx::space_cluster, remote);
    o[15] = dyn[0];
  }
  if (cta == 0 && tid < 32) {
    const uint32_t lane = ptx::get_sreg_laneid();
    masks[lane * 5 + 0] = ptx::get_sreg_lanemask_eq();
    masks[lane * 5 + 1] = ptx::get_sreg_lanemask_lt();
    masks[lane * 5 + 2] = ptx::get_sreg_lanemask_le();
    masks[lane * 5 + 3] = ptx::get_sreg_lanemask_gt();
    masks[lane * 5 + 4] = ptx::get_sreg_lanemask_ge();
  }
  // nobody leaves while a peer may still read its word
  ptx::barrier_cluster_arrive(ptx::sem_release);
  ptx::barrier_cluster_wait(ptx::sem_acquire);
}
