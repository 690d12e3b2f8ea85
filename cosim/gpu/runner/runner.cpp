// runner.cpp: hopsync's GPU runner. Runs a batch of firmware programs (PTX + launch descriptions
// written by `hopsync gpu pack`) on an sm_90 GPU through the CUDA driver API and writes back every
// output buffer. Formats: cosim/gpu/runner/README.md.
//
// Build (on the device): nvcc -O2 -arch=sm_90 runner.cpp -lcuda -o runner
// Run:                   ./runner BATCH_FILE OUT_DIR [--resume] [--timeout SECONDS] [--only NAME]
//                         ./runner --encode TENSORMAPS_FILE OUT_FILE   (tensor-map encoder only)
//
// BATCH_FILE lists launch descriptions, one path a line (relative to the batch file's folder).
// Per launch NAME the runner writes OUT_DIR/NAME.result and OUT_DIR/NAME.BUFFER.bin for every
// output buffer. A failing launch is reported (error name from cuGetErrorName) and the batch goes
// on; after an error that poisons the context (a trap, an illegal address) the primary context is
// reset. A kernel still running after --timeout seconds (default 20) is reported as `timeout` and
// the runner exits with status 3 (the process exit ends the kernel); run it again with --resume
// to go on with the next launch (run_batch.sh does).
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

namespace {

struct BufDesc {
  std::string name;
  size_t bytes = 0;
  size_t offset = 0;
  bool zero = false;  // offset `zero`: zero-filled, not in the data file
  bool output = false;
};

// A `tensormap` line: the arguments of cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col (CUDA
// Driver API §6.30 Tensor Map Object Management), enums as the driver's numeric values, arrays
// innermost dimension first. globalAddress = the buffer's device address + offset; a buffer
// written `@ADDRESS` (encode-only mode, --encode) is a literal address instead.
struct TensorMapDesc {
  std::string name, buffer;
  bool im2col = false;
  unsigned long long offset = 0;
  unsigned type = 0, rank = 0, interleave = 0, swizzle = 0, l2 = 0, oob = 0;
  cuuint64_t dim[5] = {0}, stride[5] = {0};
  cuuint32_t box[5] = {0}, estride[5] = {0};
  int lower[5] = {0}, upper[5] = {0};
  unsigned channels = 0, pixels = 0;
};

// A place in a struct param the runner fills at launch: a buffer's device address or an
// encoded tensor map.
struct ParamFix {
  bool is_tensormap = false;
  unsigned offset = 0;
  std::string name;
};

struct ParamDesc {
  bool is_buffer = false;
  bool is_tensormap = false;
  bool is_struct = false;
  std::string buffer;  // the buffer, or the tensor map's name
  unsigned size = 0;
  unsigned long long value = 0;
  std::vector<unsigned char> bytes;  // a struct's literal bytes
  std::vector<ParamFix> fixes;       // and what goes over them
};

struct LaunchDesc {
  std::string file, dir, name, ptx, entry, data;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  unsigned dynamic_smem = 0;
  std::vector<BufDesc> buffers;
  std::vector<TensorMapDesc> tensormaps;
  std::vector<ParamDesc> params;
};

// Parses the words after `tensormap`:
//   NAME tiled|im2col BUFFER OFFSET type T rank R interleave I swizzle S l2 L oob O
//   dim D{R} stride S{R-1} (box B{R} | lower L{R-2} upper U{R-2} channels C pixels P) estride E{R}
bool parse_tensormap(std::istringstream& ls, TensorMapDesc& t, std::string& err) {
  std::string mode;
  if (!(ls >> t.name >> mode >> t.buffer >> t.offset)) return err = "bad tensormap head", false;
  if (mode != "tiled" && mode != "im2col") return err = "tensormap mode must be tiled or im2col", false;
  t.im2col = mode == "im2col";
  std::string k;
  bool has_rank = false;
  while (ls >> k) {
    auto need_rank = [&]() {
      if (!has_rank) err = "tensormap `" + k + "` before `rank`";
      return has_rank;
    };
    bool ok = true;
    if (k == "type") ok = bool(ls >> t.type);
    else if (k == "rank") {
      ok = bool(ls >> t.rank) && t.rank >= 1 && t.rank <= 5;
      has_rank = ok;
    } else if (k == "interleave") ok = bool(ls >> t.interleave);
    else if (k == "swizzle") ok = bool(ls >> t.swizzle);
    else if (k == "l2") ok = bool(ls >> t.l2);
    else if (k == "oob") ok = bool(ls >> t.oob);
    else if (k == "channels") ok = bool(ls >> t.channels);
    else if (k == "pixels") ok = bool(ls >> t.pixels);
    else if (k == "dim" || k == "box" || k == "estride") {
      if (!need_rank()) return false;
      for (unsigned i = 0; i < t.rank && ok; ++i) {
        unsigned long long v = 0;
        ok = bool(ls >> v);
        if (k == "dim") t.dim[i] = v;
        else if (k == "box") t.box[i] = (cuuint32_t)v;
        else t.estride[i] = (cuuint32_t)v;
      }
    } else if (k == "stride") {
      if (!need_rank()) return false;
      for (unsigned i = 0; i + 1 < t.rank && ok; ++i) ok = bool(ls >> t.stride[i]);
    } else if (k == "lower" || k == "upper") {
      if (!need_rank()) return false;
      for (unsigned i = 0; i + 2 < t.rank && ok; ++i) ok = bool(ls >> (k == "lower" ? t.lower[i] : t.upper[i]));
    } else {
      return err = "unknown tensormap key `" + k + "`", false;
    }
    if (!ok) return err = "bad tensormap `" + k + "`", false;
  }
  if (!has_rank) return err = "tensormap without rank", false;
  return true;
}

const char* err_name(CUresult r);

// Encodes a tensor map with the driver. `base` is its buffer's device address.
CUresult encode_tensormap(const TensorMapDesc& t, unsigned long long base, CUtensorMap* out) {
  void* addr = (void*)(uintptr_t)(base + t.offset);
  if (t.im2col)
    return cuTensorMapEncodeIm2col(out, (CUtensorMapDataType)t.type, t.rank, addr, t.dim, t.stride, t.lower, t.upper,
                                   t.channels, t.pixels, t.estride, (CUtensorMapInterleave)t.interleave,
                                   (CUtensorMapSwizzle)t.swizzle, (CUtensorMapL2promotion)t.l2,
                                   (CUtensorMapFloatOOBfill)t.oob);
  return cuTensorMapEncodeTiled(out, (CUtensorMapDataType)t.type, t.rank, addr, t.dim, t.stride, t.box, t.estride,
                                (CUtensorMapInterleave)t.interleave, (CUtensorMapSwizzle)t.swizzle,
                                (CUtensorMapL2promotion)t.l2, (CUtensorMapFloatOOBfill)t.oob);
}

std::string hex_bytes(const void* p, size_t n) {
  static const char* h = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = ((const unsigned char*)p)[i];
    s += h[c >> 4];
    s += h[c & 15];
  }
  return s;
}

std::string dirname_of(const std::string& p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? std::string(".") : p.substr(0, k);
}

std::string join(const std::string& dir, const std::string& f) {
  if (!f.empty() && f[0] == '/') return f;
  return dir + "/" + f;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

bool write_file(const std::string& path, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

// Parses a launch description; on failure returns false with `err` set.
bool parse_launch(const std::string& path, LaunchDesc& d, std::string& err) {
  std::string text;
  if (!read_file(path, text)) {
    err = "cannot read " + path;
    return false;
  }
  d.file = path;
  d.dir = dirname_of(path);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool header = false, end = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t hash = line.find('#');  // comments: from `#` to the end of the line
    if (hash != std::string::npos) line.erase(hash);
    size_t s = line.find_first_not_of(" \t");
    if (s == std::string::npos) continue;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    auto bad = [&](const std::string& what) {
      err = path + ":" + std::to_string(lineno) + ": " + what + ": `" + line + "`";
      return false;
    };
    if (!header) {
      std::string v;
      ls >> v;
      if (key != "hopsync-launch" || v != "1") return bad("expected `hopsync-launch 1` first");
      header = true;
      continue;
    }
    if (key == "name") {
      if (!(ls >> d.name)) return bad("bad name");
    } else if (key == "ptx") {
      if (!(ls >> d.ptx)) return bad("bad ptx");
    } else if (key == "entry") {
      if (!(ls >> d.entry)) return bad("bad entry");
    } else if (key == "data") {
      if (!(ls >> d.data)) return bad("bad data");
    } else if (key == "grid" || key == "block" || key == "cluster") {
      unsigned* v = key == "grid" ? d.grid : key == "block" ? d.block : d.cluster;
      if (!(ls >> v[0] >> v[1] >> v[2]) || !v[0] || !v[1] || !v[2]) return bad("bad dimensions");
    } else if (key == "dynamic_smem") {
      if (!(ls >> d.dynamic_smem)) return bad("bad dynamic_smem");
    } else if (key == "buffer") {
      BufDesc b;
      int out = 0;
      std::string off;
      if (!(ls >> b.name >> b.bytes >> off >> out) || b.bytes == 0) return bad("bad buffer");
      if (off == "zero") {
        b.zero = true;
      } else {
        char* endp = nullptr;
        b.offset = std::strtoull(off.c_str(), &endp, 10);
        if (off.empty() || *endp) return bad("bad buffer offset");
      }
      b.output = out != 0;
      d.buffers.push_back(b);
    } else if (key == "param") {
      std::string kind;
      ls >> kind;
      ParamDesc p;
      if (kind == "buffer") {
        p.is_buffer = true;
        if (!(ls >> p.buffer)) return bad("bad param buffer");
        bool found = false;
        for (auto& b : d.buffers) found |= b.name == p.buffer;
        if (!found) return bad("param names an unknown buffer");
      } else if (kind == "tensormap") {
        p.is_tensormap = true;
        if (!(ls >> p.buffer)) return bad("bad param tensormap");
        bool found = false;
        for (auto& t : d.tensormaps) found |= t.name == p.buffer;
        if (!found) return bad("param names an unknown tensormap");
      } else if (kind == "value") {
        if (!(ls >> p.size >> p.value) || p.size == 0 || p.size > 4096) return bad("bad param value");
      } else if (kind == "struct") {
        // struct SIZE HEX (buffer|tensormap OFFSET NAME)*
        p.is_struct = true;
        std::string hex;
        if (!(ls >> p.size >> hex) || p.size == 0 || p.size > 4096 || hex.size() != 2 * p.size) return bad("bad param struct");
        for (unsigned k = 0; k < p.size; ++k) p.bytes.push_back((unsigned char)std::stoul(hex.substr(2 * k, 2), nullptr, 16));
        std::string what;
        while (ls >> what) {
          ParamFix f;
          f.is_tensormap = what == "tensormap";
          if ((what != "buffer" && !f.is_tensormap) || !(ls >> f.offset >> f.name)) return bad("bad param struct field");
          unsigned n = f.is_tensormap ? sizeof(CUtensorMap) : sizeof(CUdeviceptr);
          if (f.offset + n > p.size) return bad("param struct field past its end");
          bool found = false;
          if (f.is_tensormap)
            for (auto& t : d.tensormaps) found |= t.name == f.name;
          else
            for (auto& b : d.buffers) found |= b.name == f.name;
          if (!found) return bad("param struct field names an unknown buffer or tensormap");
          p.fixes.push_back(f);
        }
      } else {
        return bad("param must be `buffer NAME`, `tensormap NAME`, `value SIZE VALUE` or `struct SIZE HEX ...`");
      }
      d.params.push_back(p);
    } else if (key == "tensormap") {
      TensorMapDesc t;
      std::string e;
      if (!parse_tensormap(ls, t, e)) return bad(e);
      bool found = false;
      for (auto& b : d.buffers) found |= b.name == t.buffer;
      if (!found) return bad("tensormap names an unknown buffer");
      d.tensormaps.push_back(t);
    } else if (key == "end") {
      end = true;
      break;
    } else {
      return bad("unknown key");
    }
  }
  if (!header) {
    err = path + ": empty launch description";
    return false;
  }
  if (!end) {
    err = path + ": missing `end`";
    return false;
  }
  if (d.name.empty() || d.ptx.empty() || d.entry.empty()) {
    err = path + ": name, ptx and entry are required";
    return false;
  }
  return true;
}

const char* err_name(CUresult r) {
  const char* s = nullptr;
  if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s) return "CUDA_ERROR_UNKNOWN_CODE";
  return s;
}

const char* err_string(CUresult r) {
  const char* s = nullptr;
  if (cuGetErrorString(r, &s) != CUDA_SUCCESS || !s) return "";
  return s;
}

struct Result {
  std::string name;
  std::string status = "ok";
  std::string phase, error, message;
  std::vector<std::string> jit;
  double elapsed_ms = -1;
  std::vector<std::string> outputs;  // "BUF FILE BYTES"
  std::vector<std::string> tensormaps;  // "NAME FILE": the driver-encoded CUtensorMap's 128 bytes

  void fail(const char* ph, CUresult r, const std::string& msg = "") {
    if (status != "ok") return;  // keep the first error
    status = "error";
    phase = ph;
    error = err_name(r);
    message = msg.empty() ? err_string(r) : msg;
  }
  void fail_text(const char* ph, const std::string& e, const std::string& msg) {
    if (status != "ok") return;
    status = "error";
    phase = ph;
    error = e;
    message = msg;
  }
  std::string text() const {
    std::ostringstream o;
    o << "launch " << name << "\n"
      << "status " << status << "\n";
    if (!phase.empty()) o << "phase " << phase << "\n";
    if (!error.empty()) o << "error " << error << "\n";
    if (!message.empty()) o << "message " << message << "\n";
    for (auto& j : jit) o << "jit " << j << "\n";
    if (elapsed_ms >= 0) o << "elapsed_ms " << elapsed_ms << "\n";
    for (auto& x : outputs) o << "output " << x << "\n";
    for (auto& x : tensormaps) o << "tensormap " << x << "\n";
    return o.str();
  }
};

void add_log(std::vector<std::string>& out, const char* log) {
  std::istringstream in(log);
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!l.empty()) out.push_back(l);
  }
}

std::string g_out;

void write_result(const Result& r) {
  std::string t = r.text();
  std::string tmp = join(g_out, r.name + ".result.tmp");
  write_file(tmp, t.data(), t.size());
  std::rename(tmp.c_str(), join(g_out, r.name + ".result").c_str());
  std::remove(join(g_out, r.name + ".started").c_str());
  std::printf("%s: %s", r.name.c_str(), r.status.c_str());
  if (r.status != "ok") std::printf(" %s (%s) %s", r.error.c_str(), r.phase.c_str(), r.message.c_str());
  if (r.elapsed_ms >= 0) std::printf(" %.3f ms", r.elapsed_ms);
  std::printf("\n");
  for (auto& j : r.jit) std::printf("  jit: %s\n", j.c_str());
  std::fflush(stdout);
}

CUdevice g_dev;
CUcontext g_ctx = nullptr;

void reset_context();

bool ensure_context(Result& r) {
  if (g_ctx) {
    // An error left by an earlier launch (reported late) must not be charged to this one.
    CUresult e = cuCtxSynchronize();
    if (e == CUDA_SUCCESS) return true;
    std::printf("runner: the context holds %s from an earlier launch; resetting it\n", err_name(e));
    reset_context();
  }
  CUresult e = cuDevicePrimaryCtxRetain(&g_ctx, g_dev);
  if (e != CUDA_SUCCESS) {
    g_ctx = nullptr;
    r.fail("context", e);
    return false;
  }
  e = cuCtxSetCurrent(g_ctx);
  if (e != CUDA_SUCCESS) {
    r.fail("context", e);
    return false;
  }
  return true;
}

void reset_context() {
  if (!g_ctx) return;
  cuDevicePrimaryCtxRelease(g_dev);
  cuDevicePrimaryCtxReset(g_dev);
  g_ctx = nullptr;
}

void run_one(const LaunchDesc& d, double timeout_s) {
  Result r;
  r.name = d.name;
  {
    std::string started = join(g_out, d.name + ".started");
    write_file(started, "", 0);
  }
  std::string ptx, data;
  if (!read_file(join(d.dir, d.ptx), ptx)) {
    r.fail_text("read", "HOPSYNC_NO_PTX", "cannot read " + join(d.dir, d.ptx));
    write_result(r);
    return;
  }
  if (!d.data.empty() && !read_file(join(d.dir, d.data), data)) {
    r.fail_text("read", "HOPSYNC_NO_DATA", "cannot read " + join(d.dir, d.data));
    write_result(r);
    return;
  }
  if (!ensure_context(r)) {
    write_result(r);
    return;
  }
  bool poisoned = false;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> ptrs(d.buffers.size(), 0);

  // ---- JIT ----
  {
    static char elog[1 << 16], ilog[1 << 16];
    elog[0] = ilog[0] = 0;
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                           CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {elog, (void*)(uintptr_t)sizeof(elog), ilog, (void*)(uintptr_t)sizeof(ilog)};
    CUresult e = cuModuleLoadDataEx(&mod, ptx.c_str(), 4, opts, vals);
    if (e != CUDA_SUCCESS) {
      r.fail("load", e);
      add_log(r.jit, elog);
      add_log(r.jit, ilog);
      mod = nullptr;
      goto done;
    }
    e = cuModuleGetFunction(&fn, mod, d.entry.c_str());
    if (e != CUDA_SUCCESS) {
      r.fail("function", e, "no entry `" + d.entry + "`");
      goto done;
    }
  }
  // ---- function attributes ----
  if (d.dynamic_smem > 0) {
    CUresult e = cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)d.dynamic_smem);
    if (e != CUDA_SUCCESS) {
      r.fail("attribute", e, "MAX_DYNAMIC_SHARED_SIZE_BYTES " + std::to_string(d.dynamic_smem) + ": " + err_string(e));
      goto done;
    }
  }
  if ((unsigned long long)d.cluster[0] * d.cluster[1] * d.cluster[2] > 8) {
    CUresult e = cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (e != CUDA_SUCCESS) {
      r.fail("attribute", e, std::string("NON_PORTABLE_CLUSTER_SIZE_ALLOWED: ") + err_string(e));
      goto done;
    }
  }
  // ---- buffers ----
  for (size_t i = 0; i < d.buffers.size(); ++i) {
    const BufDesc& b = d.buffers[i];
    CUresult e = cuMemAlloc(&ptrs[i], b.bytes);
    if (e != CUDA_SUCCESS) {
      ptrs[i] = 0;
      r.fail("alloc", e, "buffer " + b.name + ": " + err_string(e));
      goto done;
    }
    if (b.zero) {
      e = cuMemsetD8(ptrs[i], 0, b.bytes);
    } else if (b.offset + b.bytes > data.size()) {
      r.fail_text("alloc", "HOPSYNC_SHORT_DATA", "data file too short for buffer " + b.name);
      goto done;
    } else {
      e = cuMemcpyHtoD(ptrs[i], data.data() + b.offset, b.bytes);
    }
    if (e != CUDA_SUCCESS) {
      r.fail("upload", e);
      goto done;
    }
  }
  {
    // ---- tensor maps (encoded once the buffers have their device addresses) ----
    std::vector<CUtensorMap> maps(d.tensormaps.size());
    for (size_t i = 0; i < d.tensormaps.size(); ++i) {
      const TensorMapDesc& t = d.tensormaps[i];
      unsigned long long base = 0;
      for (size_t k = 0; k < d.buffers.size(); ++k)
        if (d.buffers[k].name == t.buffer) base = ptrs[k];
      CUresult e = encode_tensormap(t, base, &maps[i]);
      if (e != CUDA_SUCCESS) {
        r.fail("tensormap", e, "tensormap " + t.name + ": " + err_string(e));
        goto done;
      }
      std::string file = d.name + ".tensormap." + t.name + ".bin";
      if (write_file(join(g_out, file), &maps[i], sizeof(CUtensorMap))) r.tensormaps.push_back(t.name + " " + file);
    }
    // ---- params ----
    std::vector<std::vector<unsigned char>> storage(d.params.size());
    std::vector<void*> args(d.params.size());
    for (size_t i = 0; i < d.params.size(); ++i) {
      const ParamDesc& p = d.params[i];
      if (p.is_tensormap) {
        // The kernel declares `.param .align 64 .b8 name[128]` (a __grid_constant__ CUtensorMap):
        // the driver copies the param's bytes, so only their contents matter here.
        storage[i].resize(sizeof(CUtensorMap));
        for (size_t k = 0; k < d.tensormaps.size(); ++k)
          if (d.tensormaps[k].name == p.buffer) std::memcpy(storage[i].data(), &maps[k], sizeof(CUtensorMap));
      } else if (p.is_buffer) {
        storage[i].resize(sizeof(CUdeviceptr));
        for (size_t k = 0; k < d.buffers.size(); ++k)
          if (d.buffers[k].name == p.buffer) std::memcpy(storage[i].data(), &ptrs[k], sizeof(CUdeviceptr));
      } else if (p.is_struct) {
        // A struct passed by value (CUTLASS/CuTe `Params`): its bytes, with each buffer's device
        // address and each encoded tensor map written at its offset.
        storage[i] = p.bytes;
        for (const ParamFix& f : p.fixes) {
          if (f.is_tensormap) {
            for (size_t k = 0; k < d.tensormaps.size(); ++k)
              if (d.tensormaps[k].name == f.name) std::memcpy(storage[i].data() + f.offset, &maps[k], sizeof(CUtensorMap));
          } else {
            for (size_t k = 0; k < d.buffers.size(); ++k)
              if (d.buffers[k].name == f.name) std::memcpy(storage[i].data() + f.offset, &ptrs[k], sizeof(CUdeviceptr));
          }
        }
      } else {
        storage[i].assign(p.size < 8 ? 8 : p.size, 0);
        std::memcpy(storage[i].data(), &p.value, 8);  // little-endian: low `size` bytes hold the value
      }
      args[i] = storage[i].data();
    }
    CUresult e = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (e != CUDA_SUCCESS) {
      stream = nullptr;
      r.fail("stream", e);
      goto done;
    }
    CUlaunchAttribute attr[1];
    std::memset(attr, 0, sizeof(attr));
    CUlaunchConfig cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = d.grid[0];
    cfg.gridDimY = d.grid[1];
    cfg.gridDimZ = d.grid[2];
    cfg.blockDimX = d.block[0];
    cfg.blockDimY = d.block[1];
    cfg.blockDimZ = d.block[2];
    cfg.sharedMemBytes = d.dynamic_smem;
    cfg.hStream = stream;
    if (d.cluster[0] * d.cluster[1] * d.cluster[2] != 1) {
      attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr[0].value.clusterDim.x = d.cluster[0];
      attr[0].value.clusterDim.y = d.cluster[1];
      attr[0].value.clusterDim.z = d.cluster[2];
      cfg.attrs = attr;
      cfg.numAttrs = 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    e = cuLaunchKernelEx(&cfg, fn, args.data(), nullptr);
    if (e != CUDA_SUCCESS) {
      r.fail("launch", e);
      poisoned = true;
      goto done;
    }
    for (;;) {
      e = cuStreamQuery(stream);
      if (e != CUDA_ERROR_NOT_READY) break;
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > timeout_s) {
        r.fail_text("sync", "HOPSYNC_TIMEOUT", "kernel still running after " + std::to_string(timeout_s) + " s (hang or deadlock); runner exits");
        r.status = "timeout";
        write_result(r);
        std::fflush(stdout);
        _exit(3);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // On sm_90 a trapping kernel's stream can read as complete while the error reaches the context
    // only afterwards (seen on an H200 with driver 580.159.04): ask the context as well.
    if (e == CUDA_SUCCESS) e = cuCtxSynchronize();
    r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (e != CUDA_SUCCESS) {
      r.fail("sync", e);
      poisoned = true;
    }
    // ---- read back (also after a failed kernel: whatever can be read is kept) ----
    for (size_t i = 0; i < d.buffers.size(); ++i) {
      const BufDesc& b = d.buffers[i];
      if (!b.output) continue;
      std::vector<unsigned char> host(b.bytes);
      CUresult c = cuMemcpyDtoH(host.data(), ptrs[i], b.bytes);
      if (c != CUDA_SUCCESS) {
        r.fail("readback", c);
        poisoned = true;
        break;
      }
      std::string file = d.name + "." + b.name + ".bin";
      if (!write_file(join(g_out, file), host.data(), host.size())) {
        r.fail_text("readback", "HOPSYNC_WRITE", "cannot write " + file);
        break;
      }
      r.outputs.push_back(b.name + " " + file + " " + std::to_string(b.bytes));
    }
  }
done:
  for (auto p : ptrs)
    if (p) cuMemFree(p);
  if (stream) cuStreamDestroy(stream);
  if (mod) cuModuleUnload(mod);
  // Any error may have left the context unusable (a sticky error); a fresh one is cheap.
  if (poisoned || r.status != "ok") reset_context();
  write_result(r);
}

}  // namespace

// --encode FILE OUT_FILE: encodes every `tensormap` line of FILE (its BUFFER written `@ADDRESS`, a
// literal decimal or 0x address) with the driver and writes `NAME ok HEX` (the 128 bytes) or
// `NAME error CUDA_ERROR_...` per line to OUT_FILE. For decoding the CUtensorMap layout: no
// kernel runs, only the encoder.
int encode_only(const std::string& in_path, const std::string& out_path) {
  std::string text;
  if (!read_file(in_path, text)) {
    std::fprintf(stderr, "cannot read %s\n", in_path.c_str());
    return 2;
  }
  std::istringstream in(text);
  std::ostringstream o;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream ls(line);
    std::string key;
    if (!(ls >> key)) continue;
    TensorMapDesc t;
    std::string err;
    if (key != "tensormap" || !parse_tensormap(ls, t, err)) {
      o << "? parse " << (err.empty() ? "not a tensormap line" : err) << ": " << line << "\n";
      continue;
    }
    if (t.buffer.empty() || t.buffer[0] != '@') {
      o << t.name << " parse the buffer must be @ADDRESS\n";
      continue;
    }
    unsigned long long base = std::strtoull(t.buffer.c_str() + 1, nullptr, 0);
    alignas(64) CUtensorMap m;
    std::memset(&m, 0, sizeof(m));
    CUresult e = encode_tensormap(t, base, &m);
    if (e == CUDA_SUCCESS) o << t.name << " ok " << hex_bytes(&m, sizeof(m)) << "\n";
    else o << t.name << " error " << err_name(e) << "\n";
    ++n;
  }
  std::string s = o.str();
  if (!write_file(out_path, s.data(), s.size())) return 1;
  std::printf("runner: %d tensor maps encoded into %s\n", n, out_path.c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--encode") {
    CUresult e = cuInit(0);
    if (e != CUDA_SUCCESS) {
      std::fprintf(stderr, "cuInit: %s\n", err_name(e));
      return 1;
    }
    // The encoder is a host function; a current context keeps it independent of driver details.
    CUdevice dev;
    CUcontext ctx = nullptr;
    if (cuDeviceGet(&dev, 0) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS) cuCtxSetCurrent(ctx);
    return encode_only(argv[2], argv[3]);
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s BATCH_FILE OUT_DIR [--resume] [--timeout SECONDS] [--only NAME]\n", argv[0]);
    return 2;
  }
  std::string batch = argv[1];
  g_out = argv[2];
  bool resume = false;
  double timeout_s = 20;
  std::string only;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--resume") resume = true;
    else if (a == "--timeout" && i + 1 < argc) timeout_s = std::atof(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::string list;
  if (!read_file(batch, list)) {
    std::fprintf(stderr, "cannot read %s\n", batch.c_str());
    return 2;
  }
  CUresult e = cuInit(0);
  if (e != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuInit: %s %s\n", err_name(e), err_string(e));
    return 1;
  }
  e = cuDeviceGet(&g_dev, 0);
  if (e != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuDeviceGet: %s\n", err_name(e));
    return 1;
  }
  {
    char name[256] = {0};
    cuDeviceGetName(name, sizeof(name), g_dev);
    int major = 0, minor = 0, sms = 0, drv = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev);
    cuDriverGetVersion(&drv);
    std::ostringstream o;
    o << "device " << name << "\ncc " << major << "." << minor << "\nsms " << sms << "\ndriver_api " << drv << "\n";
    std::string t = o.str();
    write_file(join(g_out, "device.txt"), t.data(), t.size());
    std::printf("%s", t.c_str());
  }
  std::string bdir = dirname_of(batch);
  std::istringstream in(list);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    size_t s = line.find_first_not_of(" \t\r");
    if (s == std::string::npos || line[s] == '#') continue;
    size_t t = line.find_last_not_of(" \t\r");
    std::string path = join(bdir, line.substr(s, t - s + 1));
    LaunchDesc d;
    std::string err;
    if (!parse_launch(path, d, err)) {
      Result r;
      size_t k = path.rfind('/');
      std::string base = path.substr(k == std::string::npos ? 0 : k + 1);
      if (base.size() > 7 && base.substr(base.size() - 7) == ".launch") base = base.substr(0, base.size() - 7);
      r.name = base;
      r.fail_text("parse", "HOPSYNC_BAD_LAUNCH", err);
      write_result(r);
      continue;
    }
    if (!only.empty() && d.name != only) continue;
    if (resume) {
      std::ifstream done(join(g_out, d.name + ".result"));
      if (done) continue;
    }
    run_one(d, timeout_s);
    ++n;
  }
  reset_context();
  std::printf("runner: %d launches run\n", n);
  return 0;
}
