//! `scripts/host_manifest/manifest_from_host.py`: a host program that launches its kernel with
//! `<<<...>>>` (which nvcc 13 lowers to `__cudaGetKernel` and `__cudaLaunchKernel` unless
//! `__NV_LEGACY_LAUNCH` is defined: the CuTe tutorial `sgemm_sm80.cu` got no launch recorded)
//! gives a manifest with the launch shape, the allocation as a buffer and the scalar argument.

use std::path::PathBuf;
use std::process::Command;

const HOST: &str = r#"#include <cuda_runtime.h>
__global__ void scale(unsigned* out, unsigned k) { out[threadIdx.x] *= k; }
int main() {
  unsigned* out;
  cudaMalloc(&out, 256);
  scale<<<dim3(2, 1, 1), dim3(64, 1, 1)>>>(out, 7);
  return 0;
}
"#;

/// The entry's parameter list as nvcc writes it (the script reads only the `.param` sizes).
const PTX: &str = ".visible .entry _Z5scalePjj(\n\t.param .u64 _Z5scalePjj_param_0,\n\t.param .u32 _Z5scalePjj_param_1\n)\n{\n\tret;\n}\n";

#[test]
fn triple_chevron_launches_are_recorded() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("hopsync_host_manifest_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scale.cu"), HOST).unwrap();
    std::fs::write(dir.join("scale.ptx"), PTX).unwrap();
    let o = Command::new("python3")
        .arg(root.join("scripts/host_manifest/manifest_from_host.py"))
        .args(["scale.cu", "--ptx", "scale.ptx", "--kernel", "scale", "--names", "out", "--output", "out:u32", "--"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    for want in ["kernel = \"_Z5scalePjj\"", "grid = [2, 1, 1]", "block = [64, 1, 1]", "name = \"_Z5scalePjj_param_0\"", "buffer = \"out\"", "value = 7", "bytes = 256"] {
        assert!(out.contains(want), "no `{want}` in:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A u32 field of 0 followed by 4 bytes of padding that hold a stale pointer's high half (what
/// CUTLASS example 54's scheduler params had: a FastDivmod's `shift_right` of 0, then the high
/// half of an allocation's fake address left on the host stack) is no pointer: the field stays a
/// value, the real pointer after it a buffer.
const STALE_HOST: &str = r#"#include <cuda_runtime.h>
#include <cstring>
struct P { unsigned shift; unsigned pad; unsigned* out; };
__global__ void k(P p) { p.out[threadIdx.x] = p.shift; }
int main() {
  unsigned* out;
  cudaMalloc(&out, 256);
  P p;
  p.shift = 0;
  unsigned long long a = reinterpret_cast<unsigned long long>(out);
  p.pad = static_cast<unsigned>(a >> 32);
  p.out = out;
  k<<<1, 32>>>(p);
  return 0;
}
"#;

#[test]
fn stale_padding_is_not_a_pointer() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("hopsync_host_manifest_stale_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("stale.cu"), STALE_HOST).unwrap();
    std::fs::write(dir.join("stale.ptx"), ".visible .entry _Z1k1P(\n\t.param .align 8 .b8 _Z1k1P_param_0[16]\n)\n{\n\tret;\n}\n").unwrap();
    let o = Command::new("python3")
        .arg(root.join("scripts/host_manifest/manifest_from_host.py"))
        .args(["stale.cu", "--ptx", "stale.ptx", "--kernel", "k", "--names", "out", "--output", "out:u32", "--"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    // one buffer field, at offset 8 (the real pointer); nothing at offset 0 reads as one
    assert_eq!(out.matches("buffer = \"out\"").count(), 1, "{out}");
    let lines: Vec<&str> = out.lines().map(|l| l.trim_start_matches("//!").trim()).collect();
    let at8 = lines.iter().position(|l| *l == "offset = 8").unwrap_or_else(|| panic!("no field at offset 8:\n{out}"));
    assert_eq!(lines.get(at8 + 1), Some(&"buffer = \"out\""), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
