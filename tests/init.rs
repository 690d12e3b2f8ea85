//! `hopsync init kernel.cu`: the skeleton names every parameter of the chosen entry with what its
//! declaration tells (buffers with their element type and direction, values, tensor maps,
//! structs), the manifest parser rejects each `"TODO: ..."` placeholder by name, and once they
//! are filled in the kernel runs with the expected output.

use std::path::PathBuf;
use std::process::{Command, Output};

fn hopsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopsync")).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopsync_init_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const KERNELS: &str = r#"#include <cuda.h>
struct Params { const unsigned* in; unsigned* out; unsigned k; };

__global__ void scale(const unsigned* __restrict__ in, unsigned* out, unsigned k)
{
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i] * k;
}

__global__ void __cluster_dims__(2, 1, 1) by_struct(Params p, const __grid_constant__ CUtensorMap map)
{
  p.out[threadIdx.x] = p.in[threadIdx.x] + p.k;
}
"#;

fn replace_todo(skeleton: &str, key: &str, value: &str) -> String {
    let mut done = false;
    skeleton
        .lines()
        .map(|l| {
            if !done && l.starts_with(&format!("//! {key} = \"TODO")) {
                done = true;
                format!("//! {key} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn init_writes_a_skeleton_that_runs_once_filled_in() {
    let dir = tmp("scale");
    let cu = dir.join("k.cu");
    std::fs::write(&cu, KERNELS).unwrap();
    let cu_s = cu.to_str().unwrap();
    // Two kernels: init asks which one, naming both.
    let o = hopsync(&["init", cu_s]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("pick one with --kernel NAME") && text(&o).contains("scale(unsigned int const*, unsigned int*, unsigned int)"), "{}", text(&o));

    let o = hopsync(&["init", cu_s, "--kernel", "scale"]);
    assert!(o.status.success(), "{}", text(&o));
    let sk = String::from_utf8(o.stdout).unwrap();
    for want in [
        "kernel = \"_Z5scalePKjPjj\"",
        "name = \"in\"",
        "type = \"u32\"",
        "fill = \"iota\"",
        "name = \"out\"",
        "output = true",
        "name = \"_Z5scalePKjPjj_param_0\"   # .param .u64 _Z5scalePKjPjj_param_0: unsigned int const*",
        "buffer = \"in\"",
        "buffer = \"out\"",
        "value = \"TODO: a value of C++ type unsigned int\"",
    ] {
        assert!(sk.contains(want), "skeleton lacks `{want}`:\n{sk}");
    }
    // Each placeholder is an error naming its key, in manifest order.
    let mut man = sk.clone();
    for (key, value) in [("grid", "[2, 1, 1]"), ("block", "[64, 1, 1]"), ("bytes", "512"), ("bytes", "512"), ("value", "3")] {
        std::fs::write(&cu, format!("{man}{KERNELS}")).unwrap();
        let o = hopsync(&["check", cu_s]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(&format!("bad manifest: `{key}` is still a `hopsync init` placeholder: TODO")), "{key}: {}", text(&o));
        man = replace_todo(&man, key, value);
    }
    std::fs::write(&cu, format!("{man}\n{KERNELS}")).unwrap();
    let json = dir.join("r.json");
    let o = hopsync(&["run", cu_s, "--json", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}\n{man}", text(&o));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let hex = r["outputs"]["out"].as_str().unwrap();
    let want: String = (0..128u32).flat_map(|i| (3 * i).to_le_bytes()).map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, want);
}

#[test]
fn init_describes_structs_and_tensor_maps_and_the_cluster() {
    let dir = tmp("struct");
    let cu = dir.join("k.cu");
    std::fs::write(&cu, KERNELS).unwrap();
    let o = hopsync(&["init", cu.to_str().unwrap(), "--kernel", "by_struct"]);
    assert!(o.status.success(), "{}", text(&o));
    let sk = String::from_utf8(o.stdout).unwrap();
    for want in [
        "cluster = [2, 1, 1]   # .reqnctapercluster",
        "[[param.field]]",
        "value = \"TODO: the 24 bytes of Params (align 8), member by member\"",
        "[[tensormap]]",
        "name = \"map\"",
        "tensormap = \"map\"",
    ] {
        assert!(sk.contains(want), "skeleton lacks `{want}`:\n{sk}");
    }
    // --write puts it at the top of the file, once.
    let o = hopsync(&["init", cu.to_str().unwrap(), "--kernel", "by_struct", "--write"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(&cu).unwrap().starts_with("//! description"));
    let o = hopsync(&["init", cu.to_str().unwrap(), "--write"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("already has a `//!` manifest"), "{}", text(&o));
}

/// A file that already names its compile options (`//! [cuda]`, e.g. `cutlass = true` or flags)
/// is compiled with them: the kernel here exists only under the file's `-D`.
#[test]
fn init_compiles_with_the_files_own_cuda_options() {
    let d = tmp("cuda_options");
    let cu = d.join("flagged.cu");
    std::fs::write(&cu, "//! [cuda]\n//! flags = [\"-DHOPSYNC_INIT_FLAG\"]\n#ifdef HOPSYNC_INIT_FLAG\n__global__ void flagged(unsigned* out) { out[threadIdx.x] = threadIdx.x; }\n#endif\n").unwrap();
    let o = hopsync(&["init", cu.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("flagged"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// The PTX cache: an edit of a `.cu` file's manifest alone keeps its PTX (CUTLASS modules take
/// minutes to compile), an edit of a header beside it (a relative `#include`) compiles again.
#[test]
fn a_manifest_edit_keeps_the_cached_ptx_and_a_header_edit_does_not() {
    use hopsync_firmware::{cuda, manifest::CudaOptions};
    let d = tmp("ptx_cache");
    let cu = d.join("cached.cu");
    let header = d.join("value.cuh");
    let write = |range: u32, value: u32| {
        std::fs::write(&header, format!("#define VALUE {value}u\n")).unwrap();
        std::fs::write(&cu, format!("//! [launch]\n//! grid = [{range}, 1, 1]\n#include \"value.cuh\"\n__global__ void cached(unsigned* out) {{ out[threadIdx.x] = VALUE; }}\n")).unwrap();
    };
    write(1, 1234567);
    let (first, text) = cuda::compile(&cu, &CudaOptions::default()).unwrap();
    assert!(text.contains("1234567"), "{text}");
    let stamp = std::fs::metadata(&first).unwrap().modified().unwrap();
    // the manifest changes (same lines): the same cache entry, not written again
    write(2, 1234567);
    let (again, _) = cuda::compile(&cu, &CudaOptions::default()).unwrap();
    assert_eq!(again, first);
    assert_eq!(std::fs::metadata(&again).unwrap().modified().unwrap(), stamp, "recompiled after a manifest edit");
    // the header changes: compiled again
    write(2, 7654321);
    let (_, text) = cuda::compile(&cu, &CudaOptions::default()).unwrap();
    assert!(text.contains("7654321"), "the header edit was not seen:\n{text}");
    let _ = std::fs::remove_dir_all(&d);
}
