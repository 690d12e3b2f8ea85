//! `hopsync init kernel.cu [--kernel NAME]`: a launch-manifest skeleton for a CUDA C++ kernel.
//!
//! The `.cu` file is compiled ([`crate::cuda::compile`]), the entry picked as a manifest's
//! `kernel` picks it, and each `.param` of the entry becomes a `[[param]]` with what its PTX
//! declaration and its C++ type (the demangled entry name) tell: a pointer is a `[[buffer]]` of
//! the pointee's element type (an input when it points to `const`, else an output); a
//! `CUtensorMap` is a `[[tensormap]]`; any other `.b8` array is a struct passed by value
//! (`[[param.field]]` entries); the rest are values. Parameter names come from the kernel's C++
//! declaration when it can be found. What cannot be inferred (buffer sizes, the grid, values,
//! a struct's fields, a tensor map's shape) is a `"TODO: ..."` string, which the manifest parser
//! rejects by name until it is replaced ([`crate::manifest`]).

use crate::diag::Diag;
use crate::ir::{Loc, Module, Space, Symbol};
use crate::manifest::CudaOptions;
use crate::{demangle, names_entry, parser};
use std::fmt::Write;
use std::path::Path;

/// What a kernel parameter is, for the skeleton.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// A pointer to global memory of this manifest element type; `input` if it points to const.
    Buffer { ty: &'static str, input: bool },
    /// A `CUtensorMap` by value.
    TensorMap,
    /// Another struct by value.
    Struct,
    /// A scalar.
    Value,
}

/// One parameter as the skeleton describes it.
struct ParamInfo {
    /// The PTX `.param` name.
    ptx: String,
    /// The C++ name (or `param<i>`), used for buffers and maps.
    name: String,
    /// The C++ type, when the entry name is mangled.
    cpp: Option<String>,
    /// Its PTX declaration, as a comment.
    decl: String,
    /// Bytes and alignment.
    bytes: u64,
    align: u64,
    role: Role,
}

/// The manifest skeleton for `cu` (text of `//!` lines), compiled with `opts`.
pub fn skeleton(cu: &Path, opts: &CudaOptions, kernel: Option<&str>) -> Result<String, Diag> {
    let whole = |msg: String| {
        let mut d = Diag::new(Loc { line: 0, col: 0 }, msg);
        d.file = cu.display().to_string();
        d
    };
    let abs = std::fs::canonicalize(cu).map_err(|e| whole(format!("cannot read {}: {e}", cu.display())))?;
    let src = std::fs::read_to_string(&abs).map_err(|e| whole(format!("cannot read {}: {e}", cu.display())))?;
    let (ptx_path, ptx) = crate::cuda::compile(&abs, opts).map_err(whole)?;
    let mut m = parser::parse_module(&ptx).map_err(|d| d.with_source(&ptx_path.display().to_string(), &ptx))?;
    let entries: Vec<(crate::ir::FuncId, String)> = m.entries().filter(|(_, f)| f.body.is_some()).map(|(i, f)| (i, f.name.clone())).collect();
    let list = || entries.iter().map(|(_, n)| demangle(n).map(|d| format!("`{n}` ({d})")).unwrap_or(format!("`{n}`"))).collect::<Vec<_>>().join(", ");
    let chosen = match kernel {
        Some(want) => {
            let hits: Vec<_> = entries.iter().filter(|(_, n)| names_entry(n, want)).collect();
            match hits.as_slice() {
                [one] => (*one).clone(),
                [] => return Err(whole(format!("--kernel `{want}` is not an entry of {}; its entries are {}", cu.display(), list()))),
                _ => return Err(whole(format!("--kernel `{want}` names {} entries; give the mangled name: {}", hits.len(), list()))),
            }
        }
        None => match entries.as_slice() {
            [one] => one.clone(),
            [] => return Err(whole(format!("{} defines no kernel (`__global__` function)", cu.display()))),
            _ => return Err(whole(format!("{} has {} kernels; pick one with --kernel NAME: {}", cu.display(), entries.len(), list()))),
        },
    };
    m.select_entry(chosen.0);
    let several = entries.len() > 1;
    Ok(render(&m, &src, opts, several))
}

/// The skeleton text for the selected entry of `m`.
fn render(m: &Module, src: &str, opts: &CudaOptions, several: bool) -> String {
    let k = &m.kernel;
    let params = describe_params(m, src);
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "//! description = \"\"   # what the kernel shows (written by `hopsync init`; replace every \"TODO: ...\")");
    let pretty = demangle(&k.name).map(|d| format!("   # {d}")).unwrap_or_default();
    if several {
        let _ = writeln!(w, "//! kernel = \"{}\"{pretty}", k.name);
    }
    if *opts != CudaOptions::default() {
        let _ = writeln!(w, "//! [cuda]");
        if let Some(a) = &opts.arch {
            let _ = writeln!(w, "//! arch = \"{a}\"");
        }
        if !opts.flags.is_empty() {
            let _ = writeln!(w, "//! flags = [{}]", opts.flags.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", "));
        }
        if opts.cutlass {
            let _ = writeln!(w, "//! cutlass = true");
        }
    }
    let _ = writeln!(w, "//! [launch]");
    let _ = writeln!(w, "//! grid = \"TODO: [x, y, z] CTAs\"");
    match m.directive(".reqntid") {
        Some(v) => {
            let _ = writeln!(w, "//! block = {}   # .reqntid", dims(&v));
        }
        None => {
            let hint = m.directive(".maxntid").map(|v| format!(" (at most .maxntid {})", dims(&v))).unwrap_or_default();
            let _ = writeln!(w, "//! block = \"TODO: [x, y, z] threads per CTA{hint}\"");
        }
    }
    if let Some(v) = m.directive(".reqnctapercluster") {
        let _ = writeln!(w, "//! cluster = {}   # .reqnctapercluster (__cluster_dims__)", dims(&v));
    } else if m.directive(".explicitcluster").is_some() {
        let _ = writeln!(w, "//! cluster = \"TODO: [x, y, z] CTAs per cluster (.explicitcluster)\"");
    }
    let dynamic = m.symbols.iter().any(|s| s.space == Space::Shared && s.is_extern);
    if dynamic {
        let _ = writeln!(w, "//! dynamic_smem = \"TODO: bytes of dynamic shared memory (the module declares extern __shared__)\"");
    }
    for p in &params {
        if let Role::Buffer { ty, input } = p.role {
            let _ = writeln!(w, "//! [[buffer]]");
            let _ = writeln!(w, "//! name = \"{}\"", p.name);
            let _ = writeln!(w, "//! bytes = \"TODO: size in bytes ({}-byte elements)\"", crate::manifest::elem_bytes(ty).unwrap_or(1));
            let _ = writeln!(w, "//! type = \"{ty}\"");
            if input {
                let _ = writeln!(w, "//! fill = \"iota\"   # points to const: an input (zeros | iota | random | values | hex)");
            } else {
                let _ = writeln!(w, "//! output = true   # points to non-const: written by the kernel");
            }
        }
    }
    for p in params.iter().filter(|p| p.role == Role::TensorMap) {
        let _ = writeln!(w, "//! [[tensormap]]   # the CUtensorMap the host encodes for `{}`", p.name);
        let _ = writeln!(w, "//! name = \"{}\"", p.name);
        for f in ["buffer", "data_type", "rank", "global_dim", "global_strides", "box_dim", "element_strides"] {
            let _ = writeln!(w, "//! {f} = \"TODO: cuTensorMapEncodeTiled's {f}\"");
        }
    }
    for p in &params {
        let _ = writeln!(w, "//! [[param]]");
        let _ = writeln!(w, "//! name = \"{}\"   # {}{}", p.ptx, p.decl, p.cpp.as_ref().map(|c| format!(": {c}")).unwrap_or_default());
        match p.role {
            Role::Buffer { .. } => {
                let _ = writeln!(w, "//! buffer = \"{}\"", p.name);
            }
            Role::TensorMap => {
                let _ = writeln!(w, "//! tensormap = \"{}\"", p.name);
            }
            Role::Struct => {
                let _ = writeln!(w, "//! [[param.field]]   # one per member: offset, then buffer / value + type / tensormap");
                let _ = writeln!(w, "//! offset = 0");
                let _ = writeln!(w, "//! value = \"TODO: the {} bytes of {} (align {}), member by member\"", p.bytes, cpp_or(&p.cpp, "the struct"), p.align);
            }
            Role::Value => {
                let what = match &p.cpp {
                    Some(c) => format!("a value of C++ type {c}"),
                    None if p.bytes == 8 => "a value, or a buffer's address (buffer = \"name\")".into(),
                    None => "a value".into(),
                };
                let _ = writeln!(w, "//! value = \"TODO: {what}{}\"", if is_float(&p.decl) { " (its bits as an integer)" } else { "" });
            }
        }
    }
    s
}

/// The C++ type, else `alt`.
fn cpp_or(cpp: &Option<String>, alt: &str) -> String {
    cpp.clone().unwrap_or_else(|| alt.to_string())
}

fn is_float(decl: &str) -> bool {
    decl.contains(".f32") || decl.contains(".f64")
}

fn dims(v: &[u64]) -> String {
    let d = |i: usize| v.get(i).copied().unwrap_or(1);
    format!("[{}, {}, {}]", d(0), d(1), d(2))
}

/// Every `.param` of the selected entry, with its C++ type and name where they can be found.
fn describe_params(m: &Module, src: &str) -> Vec<ParamInfo> {
    let k = &m.kernel;
    let syms: Vec<&Symbol> = k.params.iter().map(|p| &m.symbols[p.0 as usize]).collect();
    let cpp: Vec<String> = demangle(&k.name).map(|d| cpp_param_types(&d)).unwrap_or_default();
    let cpp = (cpp.len() == syms.len()).then_some(cpp);
    let base = demangle(&k.name).map(|d| base_name(&d)).unwrap_or_else(|| k.name.clone());
    let names = source_param_names(src, &base).filter(|n| n.len() == syms.len());
    syms.iter()
        .enumerate()
        .map(|(i, s)| {
            let ty = cpp.as_ref().map(|c| c[i].clone());
            let name = names.as_ref().map(|n| n[i].clone()).unwrap_or_else(|| format!("param{i}"));
            let decl = format!(".param{} .{} {}{}", s.align.map(|a| format!(" .align {a}")).unwrap_or_default(), s.ty.text(), s.name, s.array.map(|n| format!("[{n}]")).unwrap_or_default());
            let role = role(s, ty.as_deref());
            ParamInfo { ptx: s.name.clone(), name, cpp: ty, decl, bytes: s.bytes(), align: s.alignment(), role }
        })
        .collect()
}

fn role(s: &Symbol, cpp: Option<&str>) -> Role {
    if s.array.is_some() {
        let tmap = s.bytes() == crate::tensormap::TENSOR_MAP_BYTES as u64 && s.alignment() >= 64;
        return if tmap && cpp.is_none_or(|c| c.contains("CUtensorMap")) { Role::TensorMap } else { Role::Struct };
    }
    match cpp.and_then(pointee) {
        Some((ty, input)) if s.bytes() == 8 => Role::Buffer { ty, input },
        _ => Role::Value,
    }
}

/// A pointer type's manifest element type and whether it points to const.
fn pointee(cpp: &str) -> Option<(&'static str, bool)> {
    let t = cpp.trim().strip_suffix('*')?.trim().trim_end_matches("__restrict__").trim();
    let input = t.split_whitespace().any(|w| w == "const");
    let base: String = t.split_whitespace().filter(|w| *w != "const" && *w != "volatile").collect::<Vec<_>>().join(" ");
    let ty = match base.as_str() {
        "float" => "f32",
        "double" => "f64",
        "int" => "s32",
        "unsigned int" | "unsigned" => "u32",
        "long" | "long long" => "s64",
        "unsigned long" | "unsigned long long" => "u64",
        "short" => "s16",
        "unsigned short" | "__half" | "half" | "__nv_bfloat16" => "u16",
        "signed char" => "s8",
        _ => "u8",
    };
    Some((ty, input))
}

/// `ns::k<int>` of `void ns::k<int>(int*, float)`.
fn base_name(demangled: &str) -> String {
    let open = param_list_start(demangled).unwrap_or(demangled.len());
    let head = demangled[..open].trim();
    let head = head.strip_prefix("void ").unwrap_or(head);
    let no_tpl = head.find('<').map(|i| &head[..i]).unwrap_or(head);
    no_tpl.rsplit("::").next().unwrap_or(no_tpl).to_string()
}

/// Where the parameter list of a demangled function name opens: the `(` matching the last `)`.
fn param_list_start(d: &str) -> Option<usize> {
    let close = d.rfind(')')?;
    let mut depth = 0i32;
    for (i, c) in d[..=close].char_indices().rev() {
        match c {
            ')' | '>' | ']' => depth += 1,
            '(' | '<' | '[' => {
                depth -= 1;
                if depth == 0 && c == '(' {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The parameter types of a demangled function name.
fn cpp_param_types(d: &str) -> Vec<String> {
    let Some(open) = param_list_start(d) else { return vec![] };
    let close = d.rfind(')').unwrap_or(d.len());
    let list = &d[open + 1..close];
    if list.trim().is_empty() {
        return vec![];
    }
    split_top(list).into_iter().map(|t| t.trim().to_string()).collect()
}

/// Splits at commas outside `<>`, `()`, `[]`.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The parameter names of `__global__ ... name(...)` in the CUDA source.
fn source_param_names(src: &str, name: &str) -> Option<Vec<String>> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(g) = src[from..].find("__global__").map(|i| i + from) {
        from = g + 10;
        let rest = &src[g..];
        let stop = rest.find(['{', ';']).unwrap_or(rest.len());
        let head = &rest[..stop];
        let Some(at) = head.match_indices(name).map(|(i, _)| i).find(|&i| {
            let before = head[..i].chars().next_back();
            let after = head[i + name.len()..].trim_start().chars().next();
            !before.is_some_and(is_ident) && after == Some('(')
        }) else {
            continue;
        };
        let open = at + head[at..].find('(')?;
        let close = open + head[open..].rfind(')')?;
        let list = &head[open + 1..close];
        if list.trim().is_empty() || list.trim() == "void" {
            return Some(vec![]);
        }
        return split_top(list)
            .into_iter()
            .map(|p| {
                let p = p.split('=').next().unwrap_or(p);
                let p = p.split('[').next().unwrap_or(p);
                let id: String = p.trim_end().chars().rev().take_while(|c| is_ident(*c)).collect::<Vec<_>>().into_iter().rev().collect();
                (!id.is_empty() && !id.starts_with(|c: char| c.is_ascii_digit())).then_some(id)
            })
            .collect();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_types_come_from_the_demangled_name() {
        assert_eq!(cpp_param_types("copy(unsigned int const*, unsigned int*)"), vec!["unsigned int const*", "unsigned int*"]);
        assert_eq!(cpp_param_types("void k<int, 2>(Params<int, 2>, float)"), vec!["Params<int, 2>", "float"]);
        assert_eq!(base_name("void ns::k<int, 2>(Params<int, 2>, float)"), "k");
        assert_eq!(pointee("unsigned int const*"), Some(("u32", true)));
        assert_eq!(pointee("float*"), Some(("f32", false)));
        assert_eq!(pointee("float"), None);
    }

    #[test]
    fn parameter_names_come_from_the_kernel_declaration() {
        let src = "template <int N>\n__global__ void __launch_bounds__(128) add(const float* __restrict__ a, float *b, int n = 4, const CUtensorMap tmap) {}";
        assert_eq!(source_param_names(src, "add"), Some(vec!["a".into(), "b".into(), "n".into(), "tmap".into()]));
        assert_eq!(source_param_names("__global__ void k() {}", "k"), Some(vec![]));
        assert_eq!(source_param_names("__global__ void k(int x);", "other"), None);
    }
}
