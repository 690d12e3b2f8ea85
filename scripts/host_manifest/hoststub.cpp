// A stand-in for the CUDA runtime and driver, linked into a client's own host program
// (`nvcc -cudart none`) so that the program's host code runs on a machine without a GPU and
// records what it would launch: every cudaMalloc (a distinct fake device address each), every
// cuTensorMapEncodeTiled (its arguments; the 128-byte map gets a marker naming the call), and
// every launch (grid, block, cluster, dynamic shared memory and each kernel argument's bytes,
// sized by the `.param` list of nvcc's PTX, passed in $HOPSYNC_PARAM_SIZES). Output: one line
// per event on $HOPSYNC_HOST_LOG, read by manifest_from_host.py. Calls the program makes that do
// nothing here return success (the generated `stubs.cpp` beside this file, one per symbol).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {
FILE* out() {
  static FILE* f = [] {
    const char* p = std::getenv("HOPSYNC_HOST_LOG");
    FILE* g = p ? std::fopen(p, "w") : nullptr;
    if (!g) return stderr;
    setvbuf(g, nullptr, _IOLBF, 0);
    return g;
  }();
  return f;
}
// Allocation k lives at FAKE_BASE + k * 2^32 + ALLOC_LOW. The low word is not zero, so a u32 field
// of 0 followed by padding that holds a stale pointer's high half (0x00007aKK, left on the host
// stack: CUTLASS's FastDivmod structs in example 54's scheduler params) does not read as a pointer
// to allocation k (manifest_from_host.py's buffer_of).
constexpr unsigned long long FAKE_BASE = 0x7a0000000000ull;
constexpr unsigned long long ALLOC_LOW = 0x10000000ull;
int allocations = 0;
int tensormaps = 0;
std::map<const void*, std::string>& kernels() {
  static std::map<const void*, std::string> m;
  return m;
}
// mangled name -> bytes of each .param, from $HOPSYNC_PARAM_SIZES ("name size size ..." lines)
std::map<std::string, std::vector<size_t>>& sizes() {
  static std::map<std::string, std::vector<size_t>> m = [] {
    std::map<std::string, std::vector<size_t>> r;
    const char* p = std::getenv("HOPSYNC_PARAM_SIZES");
    FILE* f = p ? std::fopen(p, "r") : nullptr;
    if (!f) return r;
    static char line[1 << 16];
    while (std::fgets(line, sizeof line, f)) {
      char* save = nullptr;
      char* name = strtok_r(line, " \n", &save);
      if (!name) continue;
      std::vector<size_t> v;
      for (char* t = strtok_r(nullptr, " \n", &save); t; t = strtok_r(nullptr, " \n", &save)) v.push_back(std::strtoull(t, nullptr, 10));
      r[name] = v;
    }
    std::fclose(f);
    return r;
  }();
  return m;
}
void launch(const void* func, dim3 grid, dim3 block, dim3 cluster, size_t smem, void** args) {
  auto k = kernels().find(func);
  std::string name = k == kernels().end() ? "?" : k->second;
  std::fprintf(out(), "launch %s grid %u %u %u block %u %u %u cluster %u %u %u smem %zu\n", name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z, cluster.x, cluster.y, cluster.z, smem);
  auto s = sizes().find(name);
  if (s == sizes().end()) {
    std::fprintf(out(), "noparams %s\n", name.c_str());
    return;
  }
  for (size_t i = 0; i < s->second.size(); ++i) {
    std::fprintf(out(), "arg %zu ", i);
    const unsigned char* b = static_cast<const unsigned char*>(args[i]);
    for (size_t j = 0; j < s->second[i]; ++j) std::fprintf(out(), "%02x", b[j]);
    std::fprintf(out(), "\n");
  }
  std::fflush(out());
}
}  // namespace

extern "C" {
void** __cudaRegisterFatBinary(void*) { static void* h; return &h; }
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* hostFun, char* deviceFun, const char*, int, void*, void*, void*, void*, int*) {
  kernels()[hostFun] = deviceFun;
}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
char __cudaInitModule(void**) { return 0; }
static dim3 pushed_grid, pushed_block;
static size_t pushed_smem;
unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t s, void*) { pushed_grid = g; pushed_block = b; pushed_smem = s; return 0; }
cudaError_t __cudaPopCallConfiguration(dim3* g, dim3* b, size_t* s, void*) { *g = pushed_grid; *b = pushed_block; *s = pushed_smem; return cudaSuccess; }

cudaError_t cudaLaunchKernel(const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t) {
  launch(func, g, b, dim3(1, 1, 1), smem, args);
  return cudaSuccess;
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* func, void** args) {
  dim3 cluster(1, 1, 1);
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == cudaLaunchAttributeClusterDimension)
      cluster = dim3(c->attrs[i].val.clusterDim.x, c->attrs[i].val.clusterDim.y, c->attrs[i].val.clusterDim.z);
  launch(func, c->gridDim, c->blockDim, cluster, c->dynamicSmemBytes, args);
  return cudaSuccess;
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void* func, void** args) { return cudaLaunchKernelExC(c, func, args); }
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t s, cudaStream_t st) { return cudaLaunchKernel(f, g, b, a, s, st); }
// nvcc 13's `<<<...>>>` (crt/host_runtime.h's __cudaLaunch without __NV_LEGACY_LAUNCH) looks the
// kernel up once with __cudaGetKernel and launches the handle: the handle is the stub's address.
extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* f) { *k = (cudaKernel_t)f; return cudaSuccess; }
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t s, cudaStream_t st) { return cudaLaunchKernel((const void*)k, g, b, a, s, st); }
extern "C" cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t s, cudaStream_t st) { return cudaLaunchKernel((const void*)k, g, b, a, s, st); }

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = reinterpret_cast<void*>(FAKE_BASE + (static_cast<unsigned long long>(allocations) << 32) + ALLOC_LOW);
  std::fprintf(out(), "malloc %d %zu\n", allocations++, bytes);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
cudaError_t cudaMallocAsync_ptsz(void** p, size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }

// H100 SXM: what the programs ask of the device. $HOPSYNC_SM_COUNT overrides the SM count, which
// sizes persistent kernels' grids (fewer SMs than tiles: each CTA loops over several tiles).
int sm_count() {
  const char* s = std::getenv("HOPSYNC_SM_COUNT");
  return s ? std::atoi(s) : 132;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "hopsync host stand-in (sm_90)");
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = sm_count();
  p->sharedMemPerBlockOptin = 232448;
  p->sharedMemPerMultiprocessor = 233472;
  p->sharedMemPerBlock = 49152;
  p->maxThreadsPerBlock = 1024;
  p->warpSize = 32;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp* p, int d) { return cudaGetDeviceProperties(p, d); }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = sm_count(); break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = 232448; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 233472; break;
    case cudaDevAttrL2CacheSize: *v = 50 << 20; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *v = 65536; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = 65536; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 49152; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *v = 1024; break;
    default: *v = 0;
  }
  return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) {
  std::memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = 90;
  a->binaryVersion = 90;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void*, int, size_t, unsigned) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "no error (hopsync host stand-in)"; }
const char* cudaGetErrorName(cudaError_t) { return "cudaSuccess"; }
cudaError_t cudaOccupancyMaxActiveClusters(int* n, const void*, const cudaLaunchConfig_t*) { *n = 16; return cudaSuccess; }

CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* addr, const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  int id = tensormaps++;
  std::memset(map, 0, sizeof *map);
  unsigned long long marker = 0x50414d54ull << 32 | static_cast<unsigned>(id);  // "TMAP", id
  std::memcpy(map, &marker, 8);
  std::fprintf(out(), "tensormap %d dtype %d rank %u addr %llu il %d swizzle %d l2 %d oob %d dims", id, int(dt), rank, (unsigned long long)addr, int(il), int(sw), int(l2), int(oob));
  for (unsigned i = 0; i < rank; ++i) std::fprintf(out(), " %llu", (unsigned long long)dims[i]);
  std::fprintf(out(), " strides");
  for (unsigned i = 0; i + 1 < rank; ++i) std::fprintf(out(), " %llu", (unsigned long long)strides[i]);
  std::fprintf(out(), " box");
  for (unsigned i = 0; i < rank; ++i) std::fprintf(out(), " %u", box[i]);
  std::fprintf(out(), " estrides");
  for (unsigned i = 0; i < rank; ++i) std::fprintf(out(), " %u", estrides[i]);
  std::fprintf(out(), "\n");
  return CUDA_SUCCESS;
}
}
