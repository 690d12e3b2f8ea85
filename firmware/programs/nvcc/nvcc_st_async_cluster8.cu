// Seed 000 "How to use st.async": an 8-CTA cluster; each block writes 16 bytes into its neighbour's
// (rank ^ 1) shared memory with st.async, completing tx on the neighbour's mbarrier. The seed's
// printf calls are replaced by a store of the received values to `out` (4 ints per block).
#include <cuda/ptx>
#include <cuda/barrier>
#include <cooperative_groups.h>

__global__ void __cluster_dims__(8, 1, 1) kernel(int* out)
{
  using cuda::ptx::sem_release;
  using cuda::ptx::sem_acquire;
  using cuda::ptx::space_cluster;
  using cuda::ptx::space_shared;
  using cuda::ptx::scope_cluster;

  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();

  using barrier_t = cuda::barrier<cuda::thread_scope_block>;

#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ int receive_buffer[4];
  __shared__ barrier_t bar;
  // The seed lets every thread call init(); PTX 9.7.13.15.1 (seed 003): "Performing any
  // non-mbarrier or mbarrier.init operations on an initialized mbarrier object results in
  // undefined behavior", and hopsync names it (MbarrierInitOnValid). One thread initializes;
  // cluster.sync() below orders it before every arrive.
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
  }

  // Sync cluster to ensure remote barrier is initialized.
  cluster.sync();

  // Get address of remote cluster barrier:
  unsigned int other_block_rank = cluster.block_rank() ^ 1;
  uint64_t * remote_bar = cluster.map_shared_rank(cuda::device::barrier_native_handle(bar), other_block_rank);
  int * remote_buffer = cluster.map_shared_rank(&receive_buffer[0], other_block_rank);

  // Arrive on local barrier:
  uint64_t arrival_token;
  if (threadIdx.x == 0) {
    // Thread 0 arrives and indicates it expects to receive a certain number of bytes as well
    arrival_token = cuda::ptx::mbarrier_arrive_expect_tx(sem_release, scope_cluster, space_shared, cuda::device::barrier_native_handle(bar), sizeof(receive_buffer));
  } else {
    arrival_token = cuda::ptx::mbarrier_arrive(sem_release, scope_cluster, space_shared, cuda::device::barrier_native_handle(bar));
  }

  // Send bytes to remote buffer, arriving on remote barrier
  if (threadIdx.x == 0) {
    cuda::ptx::st_async(remote_buffer, {int(cluster.block_rank()), 2, 3, 4}, remote_bar);
  }

  // Wait on local barrier:
  while(!cuda::ptx::mbarrier_try_wait(sem_acquire, scope_cluster, cuda::device::barrier_native_handle(bar), arrival_token)) {}

  // The seed prints the received values; here they go to `out`.
  if (threadIdx.x < 4) {
    out[cluster.block_rank() * 4 + threadIdx.x] = receive_buffer[threadIdx.x];
  }
}
