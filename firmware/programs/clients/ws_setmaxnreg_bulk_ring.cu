//! description = """
//! A warp-specialized kernel as CUTLASS's sm90 kernels shape it: warp group 0 is the producer
//! (setmaxnreg.dec to 40 registers; one elected lane, elect.sync, issues cp.async.bulk copies of
//! 512-byte chunks into a 4-stage ring with full barriers of arrival count 1 plus tx), warp group
//! 1 the consumer (setmaxnreg.inc to 232; each thread takes one float of every chunk, lane 0 of
//! each warp arrives on the stage's empty barrier of count 4 after __syncwarp). 12 chunks: the
//! ring wraps 3 times. out[t] = sum over chunks c of in[c * 128 + t] * (c + 1)."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [256, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 6144
//! fill = "iota"
//! type = "f32"
//! [[buffer]]
//! name = "out"
//! bytes = 512
//! type = "f32"
//! output = true
//! [[param]]
//! name = "_Z2wsPKfPf_param_0"
//! buffer = "in"
//! [[param]]
//! name = "_Z2wsPKfPf_param_1"
//! buffer = "out"
#include <cstdint>
#include <cuda/ptx>

namespace ptx = cuda::ptx;

constexpr int stages = 4, chunk = 128, chunks = 12;

__device__ __forceinline__ void wait_parity(uint64_t* bar, uint32_t parity)
{
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

__global__ void __launch_bounds__(256, 1) ws(const float* in, float* out)
{
  __shared__ alignas(128) float ring[stages][chunk];
  __shared__ alignas(8) uint64_t full[stages], empty[stages];
  const int warp_group = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      ptx::mbarrier_init(&full[s], 1);
      ptx::mbarrier_init(&empty[s], 4);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (warp_group == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x / 32 == 0 && ptx::elect_sync(0xffffffff)) {
      for (int c = 0; c < chunks; ++c) {
        const int s = c % stages;
        if (c >= stages) wait_parity(&empty[s], ((c / stages) - 1) & 1);
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], chunk * 4);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &ring[s][0], in + c * chunk, chunk * 4, &full[s]);
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int t = threadIdx.x - 128;
    float acc = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const int s = c % stages;
      wait_parity(&full[s], (c / stages) & 1);
      acc += ring[s][t] * float(c + 1);
      __syncwarp();
      if (t % 32 == 0) (void)ptx::mbarrier_arrive(&empty[s]);
    }
    out[t] = acc;
  }
}
