//! sm_90's limits on what one launch may declare, checked when a program is loaded, and the
//! memory layout they are measured on: where each `.shared`, `.local` and `.param` variable sits
//! (every engine lays memory out with [`Layout::of`]).
//!
//! | limit | value | source |
//! | --- | --- | --- |
//! | static shared memory per CTA | 48 KiB (49152 bytes) | ptxas 13.5, sm_90: "Entry function uses too much shared data (0xc001 bytes, 0xc000 max)"; CUDA C++ Programming Guide, Compute Capabilities, Technical Specifications per Compute Capability (footnote: kernels using more than 48 KB per block must use dynamic shared memory) |
//! | shared memory per CTA, static + dynamic | 227 KiB (232448 bytes) | the same table, compute capability 9.0: maximum amount of shared memory per thread block 227 KB |
//! | local memory per thread | 512 KiB | the same table: maximum amount of local memory per thread 512 KB (ptxas accepts a larger frame; no launch can reserve it) |
//! | `.const` variables of the module | 64 KiB | the same table: constant memory size 64 KB; ptxas: "File uses too much global constant data (0x10001 bytes, 0x10000 max)" |
//! | kernel parameters | 4352 bytes; 32764 from PTX ISA 8.1 | ptxas 13.5: "uses too much parameter space (0x1100 max)", "(0x7ffc max)" and "Kernel parameter size larger than 4352 bytes requires PTX ISA .version 8.1"; NVIDIA, "CUDA 12.1 Supports Large Kernel Parameters" (32,764 bytes) |
//!
//! A violation is an error at the declaration that crosses the limit (or, for the whole of
//! shared memory, at the manifest's `dynamic_smem`).

use crate::diag::Diag;
use crate::ir::{Module, Space};
use crate::manifest::{Key, Locator, Manifest};

/// Static shared memory per CTA (bytes).
pub const MAX_STATIC_SMEM: u64 = 48 * 1024;
/// Shared memory per CTA, static and dynamic together (bytes).
pub const MAX_SMEM: u64 = 227 * 1024;
/// Local memory per thread (bytes).
pub const MAX_LOCAL: u64 = 512 * 1024;
/// `.const` variables of a module (bytes).
pub const MAX_CONST: u64 = 64 * 1024;
/// Kernel parameter space before PTX ISA 8.1 (bytes).
pub const MAX_PARAMS_PRE_81: u64 = 4352;
/// Kernel parameter space from PTX ISA 8.1 on (bytes).
pub const MAX_PARAMS: u64 = 32764;
/// Where dynamic shared memory starts: the static variables' end rounded up to this
/// (docs/DESIGN.md address spaces).
pub const DYNAMIC_SMEM_ALIGN: u64 = 1024;

/// The per-CTA, per-thread and parameter layout of a module's variables under a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Per symbol (by `SymId`): its offset in its window (the CTA's shared memory, its
    /// function's frame, the parameter buffer); 0 for `.global` and `.const` variables, which
    /// the engines place after the buffers, and for other entries' shared variables.
    pub offset: Vec<u64>,
    /// Per symbol: whether it lives in its function's frame (a `.local` variable, or a `.param`
    /// that is no kernel parameter of the launched entry: PTX 5.1.6.4, a device function's
    /// parameters are per activation and their address is a `.local` address).
    pub in_frame: Vec<bool>,
    /// Per function (by `FuncId`): the bytes of its frame, a 16-byte multiple.
    pub frame_bytes: Vec<u64>,
    /// Bytes of the static `.shared` variables (the module's, the launched entry's and the
    /// device functions'), alignment padding included.
    pub static_smem: u64,
    /// Offset of dynamic shared memory: `static_smem` rounded up to [`DYNAMIC_SMEM_ALIGN`];
    /// every `.extern .shared` variable starts here.
    pub dyn_base: u64,
    /// Shared bytes per CTA: the static variables, then (when the kernel declares or the
    /// manifest gives dynamic shared memory) the dynamic window.
    pub smem_bytes: u64,
    /// Bytes of one thread's local memory at launch: the launched entry's frame.
    pub local_bytes: u64,
    /// Bytes of the kernel parameter buffer.
    pub param_bytes: u64,
    /// Bytes of the module's `.const` variables.
    pub const_bytes: u64,
}

/// Where each variable that crossed a limit was: (symbol index, the window's end after it).
#[derive(Default)]
struct Crossing {
    static_smem: Option<(usize, u64)>,
    local: Option<(usize, u64)>,
    params: Option<(usize, u64)>,
    consts: Option<(usize, u64)>,
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// The window a symbol is placed in.
enum Window {
    /// The CTA's static shared variables.
    Shared,
    /// Its function's frame.
    Frame(usize),
    /// The launched entry's parameter buffer.
    Params,
    /// The module's constant bank.
    Const,
    /// None of these (global variables, dynamic shared memory, other entries' shared variables).
    Elsewhere,
}

/// Which window symbol `i` of `m` lives in.
fn window(m: &Module, i: usize) -> Window {
    let s = &m.symbols[i];
    let is_entry = |f: crate::ir::FuncId| m.funcs.get(f.0 as usize).is_some_and(|func| func.entry);
    match (s.space, s.func) {
        (Space::Local, Some(f)) => Window::Frame(f.0 as usize),
        (Space::Param, Some(f)) if f == m.entry && m.kernel.params.iter().any(|p| p.0 as usize == i) => Window::Params,
        (Space::Param, Some(f)) => Window::Frame(f.0 as usize),
        // Static shared variables of the module, the launched entry and the device functions
        // (another entry's are that entry's).
        (Space::Shared, f) if !s.is_extern && f.is_none_or(|f| f == m.entry || !is_entry(f)) => Window::Shared,
        (Space::Const, _) => Window::Const,
        // A `.local`/`.param` variable outside every function (the parser refuses them) and
        // the rest take no place in these windows.
        _ => Window::Elsewhere,
    }
}

impl Layout {
    /// Lays out `m`'s variables: each window in declaration order, honouring `.align`.
    pub fn of(m: &Module, man: &Manifest) -> Layout {
        Layout::measure(m, man).0
    }

    fn measure(m: &Module, man: &Manifest) -> (Layout, Crossing) {
        let mut offset = vec![0u64; m.symbols.len()];
        let mut in_frame = vec![false; m.symbols.len()];
        let mut frames = vec![0u64; m.funcs.len()];
        let (mut smem, mut params, mut consts) = (0u64, 0u64, 0u64);
        let mut cross = Crossing::default();
        let param_limit = if m.version >= (8, 1) { MAX_PARAMS } else { MAX_PARAMS_PRE_81 };
        for (i, s) in m.symbols.iter().enumerate() {
            let (at, limit, crossed) = match window(m, i) {
                Window::Shared => (&mut smem, MAX_STATIC_SMEM, &mut cross.static_smem),
                Window::Frame(f) if f < frames.len() => {
                    in_frame[i] = true;
                    (&mut frames[f], MAX_LOCAL, &mut cross.local)
                }
                Window::Params => (&mut params, param_limit, &mut cross.params),
                Window::Const => (&mut consts, MAX_CONST, &mut cross.consts),
                Window::Frame(_) | Window::Elsewhere => continue,
            };
            offset[i] = align_up(*at, s.alignment());
            // A frame variable takes at least a byte, so that two never share an address.
            *at = offset[i] + if in_frame[i] { s.bytes().max(1) } else { s.bytes() };
            if *at > limit && crossed.is_none() {
                *crossed = Some((i, *at));
            }
        }
        // A device function's activation takes at least 16 bytes of the thread's stack even
        // without variables, so that a call chain of any functions ends at the stack's limit.
        for (f, b) in frames.iter_mut().enumerate() {
            *b = align_up(*b, 16);
            if !m.funcs[f].entry {
                *b = (*b).max(16);
            }
        }
        let dyn_base = align_up(smem, DYNAMIC_SMEM_ALIGN);
        let has_dyn = m.symbols.iter().any(|s| s.space == Space::Shared && s.is_extern);
        for (i, s) in m.symbols.iter().enumerate() {
            if s.space == Space::Shared && s.is_extern {
                offset[i] = dyn_base;
            }
        }
        let dynamic = man.launch.dynamic_smem as u64;
        let smem_bytes = if has_dyn || dynamic > 0 { dyn_base + dynamic } else { smem };
        let local_bytes = frames.get(m.entry.0 as usize).copied().unwrap_or(0);
        let layout = Layout { offset, in_frame, frame_bytes: frames, static_smem: smem, dyn_base, smem_bytes, local_bytes, param_bytes: params, const_bytes: consts };
        (layout, cross)
    }
}

/// A limit a launch crosses.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The error.
    pub diag: Diag,
    /// It points into the manifest's text; otherwise at a declaration of the module.
    pub in_manifest: bool,
}

/// Checks `m` and `man` against sm_90's limits (module doc); errors point at the declaration
/// that crosses a limit, or at `dynamic_smem` in `man_src`, the manifest's text.
pub fn check(m: &Module, man: &Manifest, man_src: &str) -> Result<Layout, Violation> {
    let decl = |diag: Diag| Violation { diag, in_manifest: false };
    let (layout, cross) = Layout::measure(m, man);
    let at = |i: usize| m.symbols[i].loc;
    let name = |i: usize| &m.symbols[i].name;
    if let Some((i, end)) = cross.static_smem {
        return Err(decl(Diag::new(
            at(i),
            format!(
                "static shared memory reaches {end} bytes with `{}`: sm_90 allows {MAX_STATIC_SMEM} bytes (48 KiB) of static `.shared` variables per CTA (ptxas: \"uses too much shared data\"); larger buffers must be dynamic shared memory (`.extern .shared`, [launch] dynamic_smem)",
                name(i)
            ),
        )));
    }
    let dynamic = man.launch.dynamic_smem as u64;
    if layout.static_smem + dynamic > MAX_SMEM {
        return Err(Violation {
            in_manifest: true,
            diag: Diag::new(
            Locator::new(man_src).at(Key::Launch("dynamic_smem")),
            format!(
                "bad manifest: shared memory per CTA would be {} bytes ({} static + {dynamic} dynamic): sm_90 allows at most {MAX_SMEM} bytes (227 KiB, CUDA C++ Programming Guide, compute capability 9.0)",
                layout.static_smem + dynamic,
                layout.static_smem
            ),
        )});
    }
    if let Some((i, end)) = cross.local {
        return Err(decl(Diag::new(
            at(i),
            format!(
                "the local frame of `{}` reaches {end} bytes per thread with `{}`: sm_90 allows at most {MAX_LOCAL} bytes (512 KiB) of local memory per thread (CUDA C++ Programming Guide, compute capability 9.0)",
                m.symbols[i].func.and_then(|f| m.funcs.get(f.0 as usize)).map_or("", |f| f.name.as_str()),
                name(i)
            ),
        )));
    }
    if let Some((i, end)) = cross.consts {
        return Err(decl(Diag::new(
            at(i),
            format!("`.const` variables reach {end} bytes with `{}`: sm_90 has {MAX_CONST} bytes (64 KiB) of constant memory (ptxas: \"too much global constant data\")", name(i)),
        )));
    }
    if let Some((i, end)) = cross.params {
        let (limit, why) = if m.version >= (8, 1) {
            (MAX_PARAMS, "")
        } else {
            (MAX_PARAMS_PRE_81, "; PTX ISA 8.1 raises it to 32764")
        };
        return Err(decl(Diag::new(
            at(i),
            format!("kernel parameters reach {end} bytes with `{}`: at most {limit} bytes (ptxas: \"uses too much parameter space\"){why}", name(i)),
        )));
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;

    const HEAD: &str = "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [32, 1, 1]\n//! dynamic_smem = DYN\n.version VER\n.target sm_90\n.address_size 64\n";

    fn program(ver: &str, dynamic: u32, params: &str, decls: &str) -> Result<Program, crate::Diag> {
        let src = format!("{}.visible .entry k({params})\n{{\n{decls}\n\tret;\n}}\n", HEAD.replace("DYN", &dynamic.to_string()).replace("VER", ver));
        Program::parse("t.ptx", &src)
    }

    #[test]
    fn static_shared_memory_stops_at_48_kib() {
        assert!(program("8.0", 0, "", ".shared .align 8 .b8 a[49152];").is_ok());
        let e = program("8.0", 0, "", ".shared .align 8 .b8 a[49144];\n.shared .align 16 .b8 b[16];").unwrap_err();
        // b starts at 49152 (aligned), ends at 49168: the declaration of b is at fault.
        assert!(e.msg.contains("49168 bytes with `b`"), "{}", e.msg);
        assert_eq!((e.loc.line, e.loc.col), (11, 23), "{e}");
    }

    #[test]
    fn shared_memory_stops_at_227_kib_static_and_dynamic_together() {
        assert!(program("8.0", 227 * 1024 - 1000, "", ".shared .align 8 .b8 a[1000];").is_ok());
        let e = program("8.0", 227 * 1024 - 999, "", ".shared .align 8 .b8 a[1000];").unwrap_err();
        assert!(e.msg.contains("232449 bytes (1000 static + 231449 dynamic)"), "{}", e.msg);
        assert_eq!(e.loc.line, 4, "points at dynamic_smem: {e}");
    }

    #[test]
    fn local_frame_stops_at_512_kib_honouring_alignment() {
        assert!(program("8.0", 0, "", ".local .align 8 .b8 a[524288];").is_ok());
        let e = program("8.0", 0, "", ".local .align 8 .b8 a[524280];\n.local .align 16 .b8 b[1];").unwrap_err();
        assert!(e.msg.contains("524289 bytes per thread with `b`"), "{}", e.msg);
    }

    #[test]
    fn const_and_params_have_their_limits() {
        let e = program("8.0", 0, "", "").and(Program::parse("t.ptx", &format!("{}.const .b8 c[65537];\n.visible .entry k()\n{{\n\tret;\n}}\n", HEAD.replace("DYN", "0").replace("VER", "8.0")))).unwrap_err();
        assert!(e.msg.contains("65537 bytes with `c`"), "{}", e.msg);
        assert!(program("8.0", 0, ".param .align 8 .b8 p[4352]", "").is_err_and(|e| e.msg.contains("bad manifest")), "4352 bytes fit; the manifest lacks the param");
        let e = program("8.0", 0, ".param .align 8 .b8 p[4353]", "").unwrap_err();
        assert!(e.msg.contains("at most 4352 bytes") && e.msg.contains("PTX ISA 8.1"), "{}", e.msg);
        let e = program("8.1", 0, ".param .align 8 .b8 p[32768]", "").unwrap_err();
        assert!(e.msg.contains("at most 32764 bytes"), "{}", e.msg);
    }

    #[test]
    fn layout_places_dynamic_shared_memory_after_the_static_variables() {
        let p = program("8.0", 4096, "", ".shared .align 8 .b8 a[100];\n.extern .shared .align 16 .b8 d[];").unwrap();
        let l = Layout::of(&p.module, &p.manifest);
        assert_eq!((l.static_smem, l.dyn_base, l.smem_bytes), (100, 1024, 1024 + 4096));
        assert_eq!(l.offset[1], 1024);
    }
}
