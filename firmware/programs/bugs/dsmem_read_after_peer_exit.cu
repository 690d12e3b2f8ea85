// expect-finding: SharedMemoryRace
//! description = """A 2-CTA cluster exchanging through distributed shared memory: each CTA writes 32 words, cluster.sync(), reads its peer's 32 words through map_shared_rank and stores them. Bug: no trailing cluster barrier, so a CTA may exit (releasing its shared memory) while its peer still reads it (PTX 9.7.13.3; CUDA programming guide: a block must not exit before its distributed shared memory is no longer accessed). Expected: SharedMemoryRace at the remote read, naming the peer's exit."""
//! [launch]
//! grid = [2, 1, 1]
//! block = [32, 1, 1]
//! cluster = [2, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! [[param]]
//! name = "exchange_param_0"
//! buffer = "out"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange(unsigned* out)
{
  __shared__ unsigned vals[32];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  vals[threadIdx.x] = rank * 1000 + threadIdx.x;
  cluster.sync();
  const unsigned* peer = cluster.map_shared_rank(vals, (rank + 1) % 2);
  const unsigned v = peer[threadIdx.x];  // DSMEM read of the peer's shared memory // expect-line
  out[rank * 32 + threadIdx.x] = v;
}
