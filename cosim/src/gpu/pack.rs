//! `hopsync gpu pack`: the instrumented program, its launch description for the GPU runner and the
//! metadata `hopsync gpu import` needs. The launch-description format is documented in
//! `cosim/gpu/runner/README.md`.

use crate::gpu::instrument::{self, Field, Layout};
use crate::gpu::{fnv64_hex, FORMAT, TRACE_BUFFER};
use crate::machine::{Config, Machine};
use hopsync_firmware::ir::Space;
use hopsync_firmware::manifest::TensorMapDecl;
use hopsync_firmware::tensormap::TensorMapMode;
use crate::budget::Footprint;
use hopsync_firmware::printer::print_module;
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Largest trace buffer pack makes (bytes).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;
/// Fewest slots per thread.
pub const MIN_SLOTS: u32 = 16;

/// A packed program.
#[derive(Debug, Clone)]
pub struct Packed {
    /// Program name (file stem).
    pub name: String,
    /// The original program.
    pub original: Program,
    /// FNV-1a 64 of the original source text.
    pub program_fnv64: String,
    /// The instrumented program (manifest included), as text.
    pub source: String,
    /// FNV-1a 64 of `source`.
    pub instrumented_fnv64: String,
    /// The instrumented program, parsed back from `source`.
    pub program: Program,
    /// Its trace fields.
    pub fields: Vec<Field>,
    /// The trace buffer's shape.
    pub layout: Layout,
}

/// What `hopsync gpu import` needs to know about a packed program (`<name>.pack.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackMeta {
    /// [`FORMAT`].
    pub format: String,
    /// Program name.
    pub name: String,
    /// Program path as given to pack (relative to the repository root).
    pub program: String,
    /// FNV-1a 64 of the program text.
    pub program_fnv64: String,
    /// FNV-1a 64 of the instrumented text.
    pub instrumented_fnv64: String,
    /// Trace layout.
    pub layout: Layout,
    /// Number of trace fields.
    pub fields: usize,
    /// Runner launch name of the instrumented program.
    pub traced_launch: String,
    /// Runner launch name of the unchanged program.
    pub plain_launch: String,
}

/// Instruments `prog` with `slots` slots per thread (None: chosen from a golden run).
pub fn pack(prog: &Program, slots: Option<u32>) -> Result<Packed, String> {
    let slots = match slots {
        Some(s) => s,
        None => choose_slots(prog)?,
    };
    pack_with(prog, slots)
}

fn max_slots(prog: &Program) -> u32 {
    let l = Layout::new(&prog.manifest.launch, 1);
    let per = (MAX_TRACE_BYTES - l.header_bytes) / 8 / l.threads.max(1) as u64;
    per.clamp(1, 1 << 24) as u32
}

/// Slots per thread: twice the most any thread writes on the golden engine, plus 16, rounded up
/// to 16 (the GPU may take other paths through timing-dependent code).
pub fn choose_slots(prog: &Program) -> Result<u32, String> {
    let cap = max_slots(prog);
    let probe = pack_with(prog, cap)?;
    let mut m = Machine::new(&probe.program, Config::of_program(&probe.program));
    let _ = m.run();
    let buf = m.buffer(TRACE_BUFFER).ok_or("no trace buffer")?;
    let (counts, _) = probe.layout.decode(buf);
    let most = counts.iter().copied().max().unwrap_or(0);
    let want = (most.saturating_mul(2).saturating_add(16)).div_ceil(16) * 16;
    Ok(want.clamp(MIN_SLOTS, cap.max(MIN_SLOTS)))
}

/// Instruments with a given slot count.
pub fn pack_with(prog: &Program, slots: u32) -> Result<Packed, String> {
    let name = prog.name();
    let (module, fields) = instrument::instrument(&prog.module, &prog.manifest.launch, slots)?;
    let layout = Layout::new(&prog.manifest.launch, slots);
    if layout.bytes() > 1 << 30 {
        return Err(format!("trace buffer of {} bytes is too large", layout.bytes()));
    }
    let program_fnv64 = fnv64_hex(&prog.portable_source());
    let mut s = String::new();
    // A `.cu` program's manifest is in the .cu file, its PTX (`source`) came from nvcc.
    let manifest_src = match &prog.cuda {
        Some(_) => std::fs::read_to_string(&prog.path).map_err(|e| format!("cannot read {}: {e}", prog.path))?,
        None => prog.source.clone(),
    };
    s.push_str(&manifest_lines(&manifest_src));
    let _ = writeln!(s, "//! [[buffer]]");
    let _ = writeln!(s, "//! name = \"{TRACE_BUFFER}\"");
    let _ = writeln!(s, "//! bytes = {}", layout.bytes());
    let _ = writeln!(s, "//! output = true");
    let _ = writeln!(s, "//! [[param]]");
    let _ = writeln!(s, "//! name = \"{TRACE_BUFFER}\"");
    let _ = writeln!(s, "//! buffer = \"{TRACE_BUFFER}\"");
    let _ = writeln!(s, "// {FORMAT}: instrumented copy of {} (fnv64 {program_fnv64}) made by `hopsync gpu pack`.", prog.path);
    let _ = writeln!(
        s,
        "// {} trace fields; {} threads x {} slots; trace buffer layout: cosim/src/gpu/instrument.rs.",
        fields.len(),
        layout.threads,
        slots
    );
    s.push_str(&print_module(&module));
    let program = Program::parse(&prog.path, &s).map_err(|d| format!("the instrumented program does not parse back:\n{d}"))?;
    Ok(Packed {
        name,
        original: prog.clone(),
        program_fnv64,
        // (of a `.cu` program: what does not depend on the checkout, as its program_fnv64:
        // `Program::portable_source`)
        instrumented_fnv64: fnv64_hex(&match &prog.cuda {
            Some(c) => hopsync_firmware::cuda::fingerprint_ptx(&s, &c.file),
            None => s.clone(),
        }),
        source: s,
        program,
        fields,
        layout,
    })
}

/// The `//!` manifest lines of a program's text.
fn manifest_lines(text: &str) -> String {
    text.lines().filter(|l| l.trim_start().starts_with("//!")).map(|l| format!("{l}\n")).collect()
}

/// The runner's launch description of a program, and its data file (every buffer's initial
/// contents, concatenated). `ptx` and `data` are file names relative to the description.
pub fn launch_description(prog: &Program, name: &str, ptx: &str, data: &str) -> Result<(String, Vec<u8>), String> {
    let man = &prog.manifest;
    let l = &man.launch;
    let mut s = String::new();
    let _ = writeln!(s, "hopsync-launch 1");
    let _ = writeln!(s, "# {} ({})", prog.path, fnv64_hex(&prog.portable_source()));
    let _ = writeln!(s, "name {name}");
    let _ = writeln!(s, "ptx {ptx}");
    let _ = writeln!(s, "entry {}", prog.module.kernel.name);
    let _ = writeln!(s, "grid {} {} {}", l.grid[0], l.grid[1], l.grid[2]);
    let _ = writeln!(s, "block {} {} {}", l.block[0], l.block[1], l.block[2]);
    let _ = writeln!(s, "cluster {} {} {}", l.cluster[0], l.cluster[1], l.cluster[2]);
    let _ = writeln!(s, "dynamic_smem {}", l.dynamic_smem);
    let _ = writeln!(s, "data {data}");
    let mut bytes = Vec::new();
    for b in &man.buffers {
        if !is_word(&b.name) {
            return Err(format!("buffer name `{}` is not a plain word", b.name));
        }
        let init = b.initial_bytes();
        if init.iter().all(|&x| x == 0) {
            let _ = writeln!(s, "buffer {} {} zero {}", b.name, b.bytes, b.output as u8);
        } else {
            let _ = writeln!(s, "buffer {} {} {} {}", b.name, b.bytes, bytes.len(), b.output as u8);
            bytes.extend_from_slice(&init);
        }
    }
    for t in &man.tensormaps {
        let _ = writeln!(s, "{}", tensormap_line(t)?);
    }
    let m = &prog.module;
    for p in &m.kernel.params {
        let sym = &m.symbols[p.0 as usize];
        debug_assert_eq!(sym.space, Space::Param);
        let mp = man.params.iter().find(|x| x.name == sym.name).ok_or_else(|| format!("param `{}` has no manifest value", sym.name))?;
        if !mp.fields.is_empty() {
            let _ = writeln!(s, "{}", struct_param_line(mp, sym.bytes())?);
            continue;
        }
        match (&mp.buffer, mp.value) {
            (Some(b), _) => {
                let _ = writeln!(s, "param buffer {b}");
            }
            (None, None) if mp.tensormap.is_some() => {
                let _ = writeln!(s, "param tensormap {}", mp.tensormap.as_deref().unwrap_or_default());
            }
            (None, Some(v)) => {
                let _ = writeln!(s, "param value {} {}", sym.bytes().max(1), v as u64);
            }
            _ => return Err(format!("param `{}` has neither buffer nor value", sym.name)),
        }
    }
    let _ = writeln!(s, "end");
    Ok((s, bytes))
}

/// The launch-description line of a struct param (`[[param.field]]`): `param struct SIZE HEX`,
/// the literal bytes (zeros where an address or a tensor map goes), then `buffer OFFSET NAME` and
/// `tensormap OFFSET NAME` for the runner to write the device address or the encoded map there.
pub fn struct_param_line(p: &hopsync_firmware::manifest::Param, size: u64) -> Result<String, String> {
    use hopsync_firmware::manifest::Piece;
    let mut bytes = vec![0u8; size as usize];
    let mut fix = String::new();
    for piece in p.pieces() {
        match piece {
            Piece::Bytes(o, b) => bytes[o as usize..o as usize + b.len()].copy_from_slice(&b),
            Piece::Buffer(o, b) if is_word(b) => {
                let _ = write!(fix, " buffer {o} {b}");
            }
            Piece::TensorMap(o, t) if is_word(t) => {
                let _ = write!(fix, " tensormap {o} {t}");
            }
            _ => return Err(format!("param `{}` names a buffer or tensormap that is not a plain word", p.name)),
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("param struct {size} {hex}{fix}"))
}

/// The launch-description line of a `[[tensormap]]`: the arguments of `cuTensorMapEncodeTiled` /
/// `cuTensorMapEncodeIm2col` (CUDA Driver API §6.30), enums as the driver's numeric values, arrays
/// innermost dimension first; the runner passes `globalAddress` = the buffer's device address
/// plus `OFFSET`. Format: `cosim/gpu/runner/README.md` ("Tensor maps").
pub fn tensormap_line(t: &TensorMapDecl) -> Result<String, String> {
    if !is_word(&t.name) || !is_word(&t.buffer) {
        return Err(format!("tensormap name `{}` or its buffer `{}` is not a plain word", t.name, t.buffer));
    }
    let sp = &t.spec;
    let join = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(" ");
    let mode = match sp.mode {
        TensorMapMode::Tiled => "tiled",
        TensorMapMode::Im2col => "im2col",
    };
    let mut s = format!(
        "tensormap {} {mode} {} {} type {} rank {} interleave {} swizzle {} l2 {} oob {} dim {} stride {}",
        t.name,
        t.buffer,
        t.offset,
        sp.data_type.driver_value(),
        sp.rank,
        sp.interleave.driver_value(),
        sp.swizzle.driver_value(),
        sp.l2_promotion.driver_value(),
        sp.oob_fill.driver_value(),
        join(&mut sp.global_dim.iter().map(u64::to_string)),
        join(&mut sp.global_strides.iter().map(u64::to_string)),
    );
    match sp.mode {
        TensorMapMode::Tiled => {
            let _ = write!(s, " box {}", join(&mut sp.box_dim.iter().map(u32::to_string)));
        }
        TensorMapMode::Im2col => {
            let _ = write!(
                s,
                " lower {} upper {} channels {} pixels {}",
                join(&mut sp.pixel_box_lower_corner.iter().map(i32::to_string)),
                join(&mut sp.pixel_box_upper_corner.iter().map(i32::to_string)),
                sp.channels_per_pixel,
                sp.pixels_per_column
            );
        }
    }
    let _ = write!(s, " estride {}", join(&mut sp.element_strides.iter().map(u32::to_string)));
    // A rank-1 map has no strides: `stride` is followed directly by the next key (the runner
    // reads as many numbers as the rank implies). One blank between words.
    Ok(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// Collects `.ptx` programs: files as given, directories recursively (skipping `bad/`), sorted.
pub fn collect_programs(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        let mut es: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        es.sort();
        for p in es {
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "bad") {
                    continue;
                }
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "ptx") || is_cuda_program(&p) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// A `.cu` file with a `//!` launch manifest (a CUDA C++ program hopsync compiles; a `.cu`
/// without one is the source of a committed `.ptx`, e.g. under nvcc/).
pub fn is_cuda_program(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "cu") && std::fs::read_to_string(p).is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with("//!")))
}

/// What [`write_batch`] did with one program.
#[derive(Debug, Clone)]
pub struct BatchEntry {
    /// Program path.
    pub program: String,
    /// Ok(meta) or why it was not packed.
    pub result: Result<PackMeta, String>,
}

/// Packs programs into `dir`: per program `<name>.ptx/.launch/.bin` (instrumented),
/// `<name>.plain.ptx/.launch/.bin` (the file unchanged), `<name>.pack.json`, and `batch.txt`
/// listing every launch description.
/// Each program is held to the memory budget `mem_limit` (packing runs the golden model on it).
pub fn write_batch(programs: &[PathBuf], dir: &Path, mem_limit: u64) -> Result<Vec<BatchEntry>, String> {
    write_batch_with(programs, dir, &PackOptions { mem_limit, ..PackOptions::default() })
}

/// How [`write_batch_with`] writes the programs.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// The newest PTX ISA version the GPU's driver JIT-compiles (CUDA 13.0's driver: 9.0): a
    /// program with a newer `.version` (nvcc 13.5 writes 9.5) is written with this one instead,
    /// and must still assemble with ptxas at that version (a construct newer than it does not).
    pub ptx_version: Option<(u32, u32)>,
    /// The memory budget each program's golden run (trace sizing) is held to (`--mem-limit`).
    pub mem_limit: u64,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions { ptx_version: None, mem_limit: crate::budget::DEFAULT_MEM_LIMIT }
    }
}

/// `text` (a module) with its `.version` lowered to `opts.ptx_version` where newer, checked by
/// ptxas when one is available.
fn retarget(text: &str, module_version: (u32, u32), opts: &PackOptions, ptxas: &Option<hopsync_firmware::cuda::Ptxas>) -> Result<String, String> {
    let Some(v) = opts.ptx_version.filter(|v| module_version > *v) else { return Ok(text.to_string()) };
    let mut done = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix(".version") {
            Some(_) if !done => {
                done = true;
                format!(".version {}.{}", v.0, v.1)
            }
            _ => l.to_string(),
        })
        .collect();
    let out = out.join("\n") + "\n";
    if let Some(p) = ptxas {
        let verdict = p.check(&out, None)?;
        if !verdict.ok {
            return Err(format!("at PTX ISA {}.{} (--ptx-version) ptxas rejects it:\n{}", v.0, v.1, verdict.output.trim()));
        }
    }
    Ok(out)
}

/// [`write_batch`] with options.
pub fn write_batch_with(programs: &[PathBuf], dir: &Path, opts: &PackOptions) -> Result<Vec<BatchEntry>, String> {
    let ptxas = opts.ptx_version.and_then(|_| hopsync_firmware::cuda::Ptxas::find().ok());
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let w = |name: &str, data: &[u8]| std::fs::write(dir.join(name), data).map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()));
    let mut entries = Vec::new();
    let mut batch = String::new();
    let mut names = std::collections::BTreeMap::new();
    for path in programs {
        // Recorded relative to the working folder (the repository root) when under it.
        let rel = std::env::current_dir().ok().and_then(|c| path.strip_prefix(c).ok().map(Path::to_path_buf));
        let shown = rel.as_deref().unwrap_or(path).to_string_lossy().trim_start_matches("./").to_string();
        let result = (|| -> Result<PackMeta, String> {
            let prog = Program::load(path).map_err(|d| d.to_string())?;
            // Packing runs the golden model on it (trace sizing): within the memory budget.
            Footprint::golden(&prog).check(&prog, "golden", opts.mem_limit).map_err(|d| d.to_string())?;
            let mut prog = prog;
            prog.path = shown.clone();
            let name = prog.name();
            if !is_word(&name) {
                return Err(format!("program name `{name}` is not a plain word"));
            }
            if let Some(other) = names.insert(name.clone(), shown.clone()) {
                return Err(format!("program name `{name}` is also the name of {other}"));
            }
            let p = pack(&prog, None)?;
            let plain = format!("{name}.plain");
            let version = prog.module.version;
            w(&format!("{name}.ptx"), retarget(&p.source, version, opts, &ptxas)?.as_bytes())?;
            let (d, data) = launch_description(&p.program, &name, &format!("{name}.ptx"), &format!("{name}.bin"))?;
            w(&format!("{name}.launch"), d.as_bytes())?;
            w(&format!("{name}.bin"), &data)?;
            // A `.cu` program's PTX gets the manifest of its `.cu` file (a program of its own).
            let plain_text = match &prog.cuda {
                Some(_) => format!("{}{}", manifest_lines(&std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?), prog.source),
                None => prog.source.clone(),
            };
            w(&format!("{plain}.ptx"), retarget(&plain_text, version, opts, &ptxas)?.as_bytes())?;
            let (d, data) = launch_description(&prog, &plain, &format!("{plain}.ptx"), &format!("{plain}.bin"))?;
            w(&format!("{plain}.launch"), d.as_bytes())?;
            w(&format!("{plain}.bin"), &data)?;
            let meta = PackMeta {
                format: FORMAT.into(),
                name: name.clone(),
                program: shown.clone(),
                program_fnv64: p.program_fnv64.clone(),
                instrumented_fnv64: p.instrumented_fnv64.clone(),
                layout: p.layout,
                fields: p.fields.len(),
                traced_launch: name.clone(),
                plain_launch: plain.clone(),
            };
            w(&format!("{name}.pack.json"), serde_json::to_string_pretty(&meta).unwrap().as_bytes())?;
            let _ = writeln!(batch, "{name}.launch");
            let _ = writeln!(batch, "{plain}.launch");
            Ok(meta)
        })();
        entries.push(BatchEntry { program: shown, result });
    }
    w("batch.txt", batch.as_bytes())?;
    Ok(entries)
}

/// A parsed launch description (the runner's input; `cosim/gpu/runner/README.md`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaunchDescription {
    /// Launch name.
    pub name: String,
    /// PTX file (relative to the description).
    pub ptx: String,
    /// Entry name.
    pub entry: String,
    /// Grid.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// Cluster.
    pub cluster: [u32; 3],
    /// Dynamic shared memory bytes.
    pub dynamic_smem: u32,
    /// Data file.
    pub data: String,
    /// Buffers: name, bytes, offset in the data file (None: zero-filled), output.
    pub buffers: Vec<(String, u64, Option<u64>, bool)>,
    /// Tensor maps: each `tensormap` line as written by [`tensormap_line`].
    pub tensormaps: Vec<String>,
    /// Params in declaration order.
    pub params: Vec<LaunchParam>,
}

/// A kernel parameter of a launch description.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchParam {
    /// `param buffer NAME`: the buffer's device address.
    Buffer(String),
    /// `param value SIZE VALUE`.
    Value(u32, u64),
    /// `param tensormap NAME`: the 128-byte `CUtensorMap` the runner encodes.
    TensorMap(String),
    /// `param struct SIZE HEX (buffer|tensormap OFFSET NAME)*`: the whole line.
    Struct(String),
}

/// Parses a launch description with the runner's rules.
pub fn parse_launch_description(text: &str) -> Result<LaunchDescription, String> {
    let mut d = LaunchDescription { grid: [1; 3], block: [1; 3], cluster: [1; 3], ..Default::default() };
    let mut header = false;
    let mut end = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        let w: Vec<&str> = t.split_whitespace().collect();
        let bad = |what: &str| format!("line {}: {what}: `{line}`", i + 1);
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad("bad number"));
        if !header {
            if w != ["hopsync-launch", "1"] {
                return Err(bad("expected `hopsync-launch 1` first"));
            }
            header = true;
            continue;
        }
        match (w[0], w.len()) {
            ("name", 2) => d.name = w[1].into(),
            ("ptx", 2) => d.ptx = w[1].into(),
            ("entry", 2) => d.entry = w[1].into(),
            ("data", 2) => d.data = w[1].into(),
            ("dynamic_smem", 2) => d.dynamic_smem = num(w[1])? as u32,
            ("grid" | "block" | "cluster", 4) => {
                let v = [num(w[1])? as u32, num(w[2])? as u32, num(w[3])? as u32];
                match w[0] {
                    "grid" => d.grid = v,
                    "block" => d.block = v,
                    _ => d.cluster = v,
                }
            }
            ("buffer", 5) => d.buffers.push((w[1].into(), num(w[2])?, if w[3] == "zero" { None } else { Some(num(w[3])?) }, num(w[4])? != 0)),
            ("param", 3) if w[1] == "buffer" => d.params.push(LaunchParam::Buffer(w[2].into())),
            ("param", 3) if w[1] == "tensormap" => {
                if !d.tensormaps.iter().any(|t| t.split_whitespace().nth(1) == Some(w[2])) {
                    return Err(bad("param names an unknown tensormap"));
                }
                d.params.push(LaunchParam::TensorMap(w[2].into()))
            }
            ("param", 4) if w[1] == "value" => d.params.push(LaunchParam::Value(num(w[2])? as u32, num(w[3])?)),
            ("param", n) if n >= 4 && w[1] == "struct" && (n - 4) % 3 == 0 => d.params.push(LaunchParam::Struct(w.join(" "))),
            ("tensormap", n) if n >= 5 => d.tensormaps.push(w.join(" ")),
            ("end", 1) => {
                end = true;
                break;
            }
            _ => return Err(bad("unknown line")),
        }
    }
    if !end {
        return Err("missing `end`".into());
    }
    Ok(d)
}

/// Runs a packed batch on the golden engine and writes the results in the runner's format (so
/// `hopsync gpu import` and replay can be exercised without a GPU). Checks each description
/// against its program's manifest: launch shape, buffers, initial contents, params.
pub fn run_batch_golden(batch: &Path, results: &Path, mem_limit: u64) -> Result<usize, String> {
    run_list_golden(batch, "batch.txt", results, mem_limit)
}

/// [`run_batch_golden`] for the launches of one batch file `list` of `batch` (e.g. the
/// `plain.txt` and `traced.txt` of `hopsync calibrate pack`).
pub fn run_list_golden(batch: &Path, list: &str, results: &Path, mem_limit: u64) -> Result<usize, String> {
    std::fs::create_dir_all(results).map_err(|e| e.to_string())?;
    let list = std::fs::read_to_string(batch.join(list)).map_err(|e| format!("{list}: {e}"))?;
    let mut n = 0;
    for l in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let text = std::fs::read_to_string(batch.join(l)).map_err(|e| format!("{l}: {e}"))?;
        let d = parse_launch_description(&text).map_err(|e| format!("{l}: {e}"))?;
        let prog = Program::load(&batch.join(&d.ptx)).map_err(|e| e.to_string())?;
        Footprint::golden(&prog).check(&prog, "golden", mem_limit).map_err(|d| d.to_string())?;
        let data = std::fs::read(batch.join(&d.data)).map_err(|e| format!("{}: {e}", d.data))?;
        let man = &prog.manifest;
        let la = &man.launch;
        if (la.grid, la.block, la.cluster, la.dynamic_smem) != (d.grid, d.block, d.cluster, d.dynamic_smem) || prog.module.kernel.name != d.entry {
            return Err(format!("{l}: launch shape or entry differs from the program's manifest"));
        }
        if man.buffers.len() != d.buffers.len() || man.params.len() != d.params.len() {
            return Err(format!("{l}: buffers or params differ from the manifest"));
        }
        for (b, (name, bytes, off, out)) in man.buffers.iter().zip(&d.buffers) {
            let init = match off {
                Some(off) => data.get(*off as usize..(*off + *bytes) as usize).ok_or(format!("{l}: data file too short"))?.to_vec(),
                None => vec![0; *bytes as usize],
            };
            if b.name != *name || b.bytes != *bytes || b.output != *out || init != b.initial_bytes() {
                return Err(format!("{l}: buffer `{name}` differs from the manifest"));
            }
        }
        let want: Vec<String> = man.tensormaps.iter().map(tensormap_line).collect::<Result<_, _>>()?;
        if want != d.tensormaps {
            return Err(format!("{l}: tensor maps differ from the manifest"));
        }
        for (p, dp) in man.params.iter().zip(&d.params) {
            let ok = match (dp, &p.buffer, p.value) {
                (LaunchParam::Buffer(b), Some(mb), _) => b == mb,
                (LaunchParam::Value(_, v), None, Some(mv)) => *v == mv as u64,
                (LaunchParam::TensorMap(t), None, None) if p.fields.is_empty() => p.tensormap.as_ref() == Some(t),
                (LaunchParam::Struct(line), None, None) => {
                    let size = prog.module.kernel.params.iter().map(|s| &prog.module.symbols[s.0 as usize]).find(|s| s.name == p.name).map(|s| s.bytes()).unwrap_or(0);
                    struct_param_line(p, size).as_ref() == Ok(line)
                }
                _ => false,
            };
            if !ok {
                return Err(format!("{l}: param `{}` differs from the manifest", p.name));
            }
        }
        let mut m = Machine::new(&prog, Config::of_program(&prog));
        let outcome = m.run();
        let mut r = format!("launch {}\n", d.name);
        match outcome {
            crate::machine::Outcome::Completed => r.push_str("status ok\n"),
            _ => {
                let why = m.findings.last().map(|f| f.to_string()).unwrap_or_else(|| format!("{outcome:?}"));
                r.push_str(&format!("status error\nphase sync\nerror GOLDEN_FAULT\nmessage {}\n", why.replace('\n', " ")));
            }
        }
        for (name, bytes, _, out) in &d.buffers {
            if !out {
                continue;
            }
            let file = format!("{}.{name}.bin", d.name);
            std::fs::write(results.join(&file), m.buffer(name).unwrap_or(&[])).map_err(|e| e.to_string())?;
            r.push_str(&format!("output {name} {file} {bytes}\n"));
        }
        std::fs::write(results.join(format!("{}.result", d.name)), r).map_err(|e| e.to_string())?;
        n += 1;
    }
    for e in std::fs::read_dir(batch).map_err(|e| e.to_string())?.flatten() {
        let p = e.path();
        if p.to_string_lossy().ends_with(".pack.json") {
            std::fs::copy(&p, results.join(p.file_name().unwrap())).map_err(|e| e.to_string())?;
        }
    }
    std::fs::write(results.join("env.txt"), "date_utc 1970-01-01T00:00:00Z\nnvidia_smi golden engine (no GPU), none\nnvcc none\n").map_err(|e| e.to_string())?;
    Ok(n)
}
