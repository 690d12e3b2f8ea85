//! description = """
//! Device functions as real code has them: a __noinline__ recursive function, calls through
//! function pointers, malloc/free on the device heap, printf and a __device__ array with an
//! initializer. Each of 8 threads computes out[t] = table_op[t % 2](fact(t % 6)) + bias[t % 4],
//! through a heap scratch buffer, and prints its value."""
//! [launch]
//! grid = [1, 1, 1]
//! block = [8, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 32
//! type = "s32"
//! output = true
//! [[param]]
//! name = "_Z5callsPi_param_0"
//! buffer = "out"
#include <cstdio>
#include <cstdlib>

__device__ int bias[4] = {100, 200, 300, 400};

__device__ __noinline__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
__device__ __noinline__ int plus_one(int x) { return x + 1; }
__device__ __noinline__ int negate(int x) { return -x; }

typedef int (*op_t)(int);

__global__ void calls(int* out)
{
  op_t ops[2] = {plus_one, negate};
  const int t = threadIdx.x;
  int* scratch = static_cast<int*>(malloc(4 * sizeof(int)));
  if (scratch == nullptr) { out[t] = -1; return; }
  scratch[0] = fact(t % 6);
  scratch[1] = ops[t % 2](scratch[0]);
  out[t] = scratch[1] + bias[t % 4];
  printf("thread %d: fact(%d) = %d -> %d\n", t, t % 6, scratch[0], out[t]);
  free(scratch);
}
