//! hopsync firmware: PTX programs with a launch manifest, parsed into a typed IR.
//!
//! A program is one `.ptx` file: a PTX module (entries, device functions, module-scope data),
//! written so ptxas would accept it unchanged, and a TOML launch manifest in its leading `//!`
//! lines ([`manifest`]) that names the entry to launch when there are several; or a `.cu` file
//! with the manifest in its leading `//!` lines, compiled by nvcc ([`cuda`]).
//! [`ops`] holds the one opcode table that drives the [`parser`], the [`printer`] and the executors
//! of every engine.

pub mod cuda;
pub mod diag;
pub mod init;
pub mod ir;
pub mod lexer;
pub mod limits;
pub mod manifest;
pub mod mma;
pub mod ops;
pub mod parser;
pub mod printer;
pub mod tensormap;

pub use diag::Diag;
pub use ir::{Instr, Mod, Module, Opcode, Operand};
pub use manifest::Manifest;

use std::path::Path;

/// A parsed program: its module, its manifest and where it came from.
#[derive(Debug, Clone)]
pub struct Program {
    /// Path it was read from (or a name for embedded programs).
    pub path: String,
    /// The source text.
    pub source: String,
    /// The launch manifest.
    pub manifest: Manifest,
    /// The PTX module.
    pub module: Module,
    /// For a `.cu` program: the source file as nvcc's `.file` names it, and the PTX file the
    /// module was read from (`path` is the `.cu`; `source` is the PTX).
    pub cuda: Option<CudaInput>,
}

/// Where a program compiled from CUDA C++ came from.
#[derive(Debug, Clone)]
pub struct CudaInput {
    /// The `.cu` path as nvcc's `.file` directive records it.
    pub file: String,
    /// The PTX file (in hopsync's cache).
    pub ptx_path: String,
}

impl Program {
    /// The text a GPU trace or a calibration record names by its hash: the source, where a CUDA
    /// program's PTX has what depends on the checkout replaced ([`cuda::fingerprint_ptx`]): nvcc
    /// writes the `.cu` file's absolute path and the headers' into `.file` directives and a hash
    /// of it into internal symbols' names, so a trace recorded in one checkout would be stale in
    /// every other. Only to hash.
    pub fn portable_source(&self) -> std::borrow::Cow<'_, str> {
        match &self.cuda {
            Some(c) => std::borrow::Cow::Owned(cuda::fingerprint_ptx(&self.source, &c.file)),
            None => std::borrow::Cow::Borrowed(&self.source),
        }
    }

    /// Parses program text; errors carry `path:line:col` and the source line.
    pub fn parse(path: &str, source: &str) -> Result<Program, Diag> {
        let wrap = |d: Diag| d.with_source(path, source);
        let module = parser::parse_module(source).map_err(wrap)?;
        let manifest = Manifest::from_source(source).map_err(wrap)?;
        Program::assemble(path, source, path, module, manifest, source)
    }

    /// A program from a module (parsed from `source`, the file `source_name`) and a manifest read
    /// from `man_src` (the program text, or the `.cu` file `path` of CUDA input): picks the
    /// launched entry, checks its declarations against sm_90's limits ([`limits::check`]) and the
    /// manifest against it. Errors carry their file and line: the manifest's in `path`, a
    /// declaration's in `source_name`.
    pub fn assemble(path: &str, source: &str, source_name: &str, mut module: Module, manifest: Manifest, man_src: &str) -> Result<Program, Diag> {
        let man_err = |d: Diag| d.with_source(path, man_src);
        select_kernel(&mut module, &manifest, man_src).map_err(man_err)?;
        limits::check(&module, &manifest, man_src).map_err(|v| if v.in_manifest { man_err(v.diag) } else { v.diag.with_source(source_name, source) })?;
        check_params(&module, &manifest, man_src).map_err(man_err)?;
        check_launch(&module, &manifest, man_src).map_err(man_err)?;
        Ok(Program { path: path.to_string(), source: source.to_string(), manifest, module, cuda: None })
    }

    /// Reads and parses a program file: `.ptx` with its manifest, or `.cu` compiled by nvcc
    /// ([`cuda::load`]).
    pub fn load(path: &Path) -> Result<Program, Diag> {
        if path.extension().is_some_and(|e| e == "cu") {
            return cuda::load(path);
        }
        let name = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| {
            let mut d = Diag::new(ir::Loc { line: 0, col: 0 }, format!("cannot read program: {e}"));
            d.file = name.clone();
            d
        })?;
        Program::parse(&name, &src)
    }

    /// The program's name: its file stem.
    pub fn name(&self) -> String {
        Path::new(&self.path).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// The demangled C++ name of a symbol (`void k<int>(int*)`), if it is a mangled name.
pub fn demangle(name: &str) -> Option<String> {
    cpp_demangle::Symbol::new(name).ok().and_then(|s| s.demangle().ok())
}

/// Whether manifest `kernel = want` names the entry `name`: the PTX name, its demangled form,
/// or the demangled form without the return type or without the parameter list (`k<int>`).
pub(crate) fn names_entry(name: &str, want: &str) -> bool {
    if name == want {
        return true;
    }
    let Some(d) = demangle(name) else { return false };
    let strip_ret = |s: &str| s.strip_prefix("void ").map(str::to_string).unwrap_or_else(|| s.to_string());
    let no_params = |s: &str| s.find('(').map(|i| s[..i].to_string()).unwrap_or_else(|| s.to_string());
    let norm = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let w = norm(want);
    [d.clone(), strip_ret(&d), no_params(&strip_ret(&d))].iter().any(|c| norm(c) == w)
}

/// Picks the launched entry: the manifest's `kernel`, or the module's only entry.
fn select_kernel(m: &mut Module, man: &Manifest, source: &str) -> Result<(), Diag> {
    let entries: Vec<(ir::FuncId, String)> = m.entries().filter(|(_, f)| f.body.is_some()).map(|(i, f)| (i, f.name.clone())).collect();
    let describe = |n: &str| match demangle(n) {
        Some(d) => format!("`{n}` ({d})"),
        None => format!("`{n}`"),
    };
    let list = || entries.iter().map(|(_, n)| describe(n)).collect::<Vec<_>>().join(", ");
    let at = manifest::Locator::new(source);
    match &man.kernel {
        Some(want) => {
            let hits: Vec<&(ir::FuncId, String)> = entries.iter().filter(|(_, n)| names_entry(n, want)).collect();
            match hits.as_slice() {
                [(f, _)] => m.select_entry(*f),
                [] => return Err(Diag::new(at.at(manifest::Key::Top("kernel")), format!("bad manifest: kernel `{want}` is not an entry of the module; its entries are {}", list()))),
                _ => {
                    return Err(Diag::new(
                        at.at(manifest::Key::Top("kernel")),
                        format!("bad manifest: kernel `{want}` names {} entries: {}; give the mangled name", hits.len(), hits.iter().map(|(_, n)| describe(n)).collect::<Vec<_>>().join(", ")),
                    ))
                }
            }
        }
        None if entries.len() > 1 => {
            return Err(Diag::new(
                at.at(manifest::Key::Top("kernel")),
                format!("bad manifest: the module has {} entries ({}); name the one to launch with `kernel = \"...\"`", entries.len(), list()),
            ))
        }
        None => {}
    }
    Ok(())
}

/// The launch must fit the entry's performance directives (PTX 11.4): `.reqnctapercluster` and
/// `.explicitcluster` fix the cluster shape, `.maxclusterrank` bounds it, `.reqntid` fixes and
/// `.maxntid` bounds the CTA shape. A launch that contradicts them fails on silicon; hopsync
/// refuses it rather than running a shape the kernel was not compiled for.
fn check_launch(m: &Module, man: &Manifest, source: &str) -> Result<(), Diag> {
    use manifest::Key;
    let at = manifest::Locator::new(source);
    let l = &man.launch;
    let dims = |v: &[u64]| -> [u64; 3] { [v.first().copied().unwrap_or(1), v.get(1).copied().unwrap_or(1), v.get(2).copied().unwrap_or(1)] };
    let bad = |k: Key<'_>, msg: String| Err(Diag::new(at.at(k), format!("bad manifest: {msg}")));
    let cluster = l.cluster.map(|x| x as u64);
    if let Some(req) = m.directive(".reqnctapercluster") {
        let want = dims(&req);
        if cluster != want {
            return bad(Key::Launch("cluster"), format!("cluster = {cluster:?}, but kernel `{}` is compiled with `.reqnctapercluster {}` (__cluster_dims__): launch it with cluster = {want:?}", m.kernel.name, req.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")));
        }
    } else if m.directive(".explicitcluster").is_some() && cluster == [1, 1, 1] {
        return bad(Key::Launch("cluster"), format!("kernel `{}` is compiled with `.explicitcluster`: it must be launched with a cluster shape (`cluster = [x, y, z]`)", m.kernel.name));
    }
    if let Some(max) = m.directive(".maxclusterrank").and_then(|v| v.first().copied()) {
        if cluster.iter().product::<u64>() > max {
            return bad(Key::Launch("cluster"), format!("cluster = {cluster:?} has more than the {max} CTAs of kernel `{}`'s `.maxclusterrank {max}`", m.kernel.name));
        }
    }
    let block = l.block.map(|x| x as u64);
    if let Some(req) = m.directive(".reqntid") {
        let want = dims(&req);
        if block != want {
            return bad(Key::Launch("block"), format!("block = {block:?}, but kernel `{}` is compiled with `.reqntid {}`: launch it with block = {want:?}", m.kernel.name, req.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")));
        }
    }
    if let Some(max) = m.directive(".maxntid") {
        let lim: u64 = max.iter().product();
        if block.iter().product::<u64>() > lim {
            return bad(Key::Launch("block"), format!("block = {block:?} has more threads than kernel `{}`'s `.maxntid {}` ({lim})", m.kernel.name, max.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")));
        }
    }
    Ok(())
}

/// Every `.param` of the entry needs a manifest value and vice versa, in the same order.
/// Errors point at the manifest entry at fault (or, for a parameter the manifest lacks, at the
/// kernel's `.param` declaration).
fn check_params(m: &Module, man: &Manifest, source: &str) -> Result<(), Diag> {
    use manifest::Key;
    let decl: Vec<&str> = m.kernel.params.iter().map(|p| m.symbols[p.0 as usize].name.as_str()).collect();
    let given: Vec<&str> = man.params.iter().map(|p| p.name.as_str()).collect();
    if decl != given {
        let at = manifest::Locator::new(source);
        let i = decl.iter().zip(&given).position(|(a, b)| a != b).unwrap_or(decl.len().min(given.len()));
        let loc = if i < given.len() {
            at.at(Key::Param(i, "name"))
        } else {
            param_decl_loc(source, decl[i]).unwrap_or_else(|| at.end())
        };
        return Err(Diag::new(
            loc,
            format!("bad manifest: kernel parameters are [{}] but the manifest gives [{}]", decl.join(", "), given.join(", ")),
        ));
    }
    for (i, (p, s)) in man.params.iter().zip(&m.kernel.params).enumerate() {
        let sym = &m.symbols[s.0 as usize];
        if p.buffer.is_some() && sym.ty.type_bytes() != Some(8) {
            let at = manifest::Locator::new(source);
            return Err(Diag::new(
                at.at(Key::Param(i, "buffer")),
                format!("bad manifest: param `{}` holds a buffer address but is declared `.{}`, not 64-bit", p.name, sym.ty.text()),
            ));
        }
        if !p.fields.is_empty() {
            check_struct_param(p, sym).map_err(|msg| Diag::new(manifest::Locator::new(source).at(Key::Param(i, "field")), format!("bad manifest: param `{}`: {msg}", p.name)))?;
        }
        // A CUtensorMap kernel argument is a 128-byte, 64-byte-aligned `.param` (CUDA Driver API
        // §6.30: "tensorMap address must be aligned to 64 bytes"; nvcc declares a
        // `const __grid_constant__ CUtensorMap` argument `.param .align 64 .b8 name[128]`).
        let is_tmap_decl = sym.bytes() == tensormap::TENSOR_MAP_BYTES as u64 && sym.alignment() >= 64 && sym.alignment() % 64 == 0;
        if p.tensormap.is_some() && !is_tmap_decl {
            let at = manifest::Locator::new(source);
            return Err(Diag::new(
                at.at(Key::Param(i, "tensormap")),
                format!(
                    "bad manifest: param `{}` receives a tensor map but is declared `.{}` ({} bytes, align {}), not `.param .align 64 .b8 {}[128]`",
                    p.name,
                    sym.ty.text(),
                    sym.bytes(),
                    sym.alignment(),
                    p.name
                ),
            ));
        }
    }
    Ok(())
}

/// The fields of a struct param must lie inside its declaration, apart, each naturally aligned;
/// a tensor map needs a 64-byte-aligned offset in a param aligned to 64 (CUDA Driver API §6.30:
/// "tensorMap address must be aligned to 64 bytes"; CuTe's `TmaDescriptor` is `alignas(64)`).
fn check_struct_param(p: &manifest::Param, sym: &ir::Symbol) -> Result<(), String> {
    let decl = format!("`.param .align {} .{} {}` ({} bytes)", sym.alignment(), sym.ty.text(), p.name, sym.bytes());
    let mut taken: Vec<std::ops::Range<u64>> = Vec::new();
    for piece in p.pieces() {
        let r = piece.range();
        let (what, align) = match &piece {
            manifest::Piece::Bytes(_, b) => ("a value", b.len() as u64),
            manifest::Piece::Buffer(..) => ("a buffer address", 8),
            manifest::Piece::TensorMap(..) => ("a tensor map", 64),
        };
        if r.end > sym.bytes() {
            return Err(format!("{what} at offset {} ends at byte {}, past the end of {decl}", r.start, r.end));
        }
        if r.start % align != 0 || sym.alignment() < align {
            return Err(format!("{what} at offset {} needs {align}-byte alignment; {decl} gives {}", r.start, if r.start % align != 0 { format!("offset {}", r.start) } else { format!("align {}", sym.alignment()) }));
        }
        if let Some(o) = taken.iter().find(|o| o.start < r.end && r.start < o.end) {
            return Err(format!("{what} at bytes {}..{} overlaps the field at bytes {}..{}", r.start, r.end, o.start, o.end));
        }
        taken.push(r);
    }
    Ok(())
}

/// The position of the name in the kernel's `.param ... name` declaration.
fn param_decl_loc(source: &str, name: &str) -> Option<ir::Loc> {
    source.lines().enumerate().find_map(|(i, l)| {
        let code = l.split("//").next().unwrap_or("");
        if !code.contains(".param") {
            return None;
        }
        let is_ident = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%');
        code.match_indices(name).find_map(|(b, _)| {
            let before = code[..b].chars().next_back();
            let after = code[b + name.len()..].chars().next();
            (!before.is_some_and(is_ident) && !after.is_some_and(is_ident))
                .then(|| ir::Loc { line: i as u32 + 1, col: code[..b].chars().count() as u32 + 1 })
        })
    })
}
