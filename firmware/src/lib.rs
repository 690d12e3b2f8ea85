//! hopsync firmware: PTX programs with a launch manifest, parsed into a typed IR.
//!
//! A program is one `.ptx` file: a PTX module with one `.entry` kernel, written so ptxas would
//! accept it unchanged, and a TOML launch manifest in its leading `//!` lines ([`manifest`]).
//! [`ops`] holds the one opcode table that drives the [`parser`], the [`printer`] and the executors
//! of every engine.

pub mod diag;
pub mod ir;
pub mod lexer;
pub mod limits;
pub mod manifest;
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
}

impl Program {
    /// Parses program text; errors carry `path:line:col` and the source line.
    pub fn parse(path: &str, source: &str) -> Result<Program, Diag> {
        let wrap = |d: Diag| d.with_source(path, source);
        let module = parser::parse_module(source).map_err(wrap)?;
        let manifest = Manifest::from_source(source).map_err(wrap)?;
        limits::check(&module, &manifest, source).map_err(wrap)?;
        check_params(&module, &manifest, source).map_err(wrap)?;
        Ok(Program { path: path.to_string(), source: source.to_string(), manifest, module })
    }

    /// Reads and parses a program file.
    pub fn load(path: &Path) -> Result<Program, Diag> {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| Diag {
            file: name.clone(),
            loc: ir::Loc { line: 0, col: 0 },
            msg: format!("cannot read program: {e}"),
            line_text: String::new(),
        })?;
        Program::parse(&name, &src)
    }

    /// The program's name: its file stem.
    pub fn name(&self) -> String {
        Path::new(&self.path).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    }
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
