//! CUDA C++ input: `hopsync run kernel.cu`.
//!
//! The launch manifest is the `.cu` file's leading `//!` block (the same TOML as a `.ptx`
//! program's; `[cuda]` adds nvcc flags). hopsync compiles the file with nvcc to PTX
//! (`-arch=sm_90a -ptx -lineinfo`, so findings name `.cu` lines through nvcc's `.loc`
//! directives), caches the PTX by content hash and runs it.
//!
//! **nvcc** is, in this order: `$HOPSYNC_NVCC`; `nvcc` on `PATH`; the PyPI packages
//! `nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl nvidia-curand` (and `nvidia-cutlass`
//! for `[cuda] cutlass = true`) installed with `python3 -m pip install --target` into
//! [`cache_dir`]`/cuda` on first use (no GPU is needed to compile). Without any of them, and
//! without pip or a network, the error names what to install.
//!
//! **The cache** ([`cache_dir`]: `$HOPSYNC_CACHE`, else `$XDG_CACHE_HOME/hopsync`, else
//! `~/.cache/hopsync`): `ptx/<key>.ptx`, where the key is the SHA-256 of nvcc's version, the
//! command line, the `.cu` path and text; `ptx/<key>.deps` lists every file the compile read
//! outside the toolchain and the system folders with its own hash, and a changed one
//! recompiles. Concurrent hopsync processes take a lock on the cache while installing or
//! compiling.
//!
//! **Committed PTX** (`[cuda] ptx = "rel/path.ptx"`): a compile that takes minutes (CUTLASS's
//! heavy instantiations) is committed as test input. Its first line names what it was made from,
//! `// hopsync: nvcc PTX, key K, <nvcc release>`, where K is the SHA-256 of nvcc's version, the
//! CUTLASS package's version (`[cuda] cutlass`), the flags and the `.cu` text but its manifest
//! (no paths: the key is the same on every machine); the `.cu` file's own path in nvcc's `.file`
//! directive is stored as [`CU_PLACEHOLDER`], the cache folder's as [`CACHE_PLACEHOLDER`]. While K matches, hopsync uses the file without
//! compiling; otherwise it compiles as usual, says the file is stale, and `HOPSYNC_WRITE_PTX=1`
//! rewrites it.

use crate::diag::Diag;
use crate::ir::Loc;
use crate::manifest::Manifest;
use crate::{parser, CudaInput, Program};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The PyPI packages of the CUDA compiler and the headers CUDA programs include, pinned: the
/// committed GPU traces of `.cu` programs name the PTX they ran by its hash, and a newer nvcc or
/// CCCL compiles other PTX (CCCL 13.3.5.0.6 replacing 13.3.4 made matmul_async_copy_stages.cu's
/// trace stale on a fresh machine). scripts/test installs the same versions.
pub const CUDA_PACKAGES: &[&str] = &["nvidia-cuda-nvcc==13.5.37", "nvidia-cuda-runtime==13.5.37", "nvidia-cuda-cccl==13.3.5.0.6", "nvidia-curand==10.4.5.25"];
/// The PyPI package of CUTLASS's and CuTe's headers and examples (pinned as above).
pub const CUTLASS_PACKAGE: &str = "nvidia-cutlass==4.2.0.0";

/// The default `-arch`: sm_90a, so the arch-specific instructions (wgmma, setmaxnreg) compile.
pub const DEFAULT_ARCH: &str = "sm_90a";

/// hopsync's cache folder (module doc).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HOPSYNC_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("hopsync");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("hopsync")
}

/// A plain error about the input as a whole (no line to point at).
fn whole(file: &Path, msg: String) -> Diag {
    let mut d = Diag::new(Loc { line: 0, col: 0 }, msg);
    d.file = file.display().to_string();
    d
}

/// Reads, compiles and parses a `.cu` program.
pub fn load(path: &Path) -> Result<Program, Diag> {
    let name = path.display().to_string();
    let cu = std::fs::read_to_string(path).map_err(|e| whole(path, format!("cannot read program: {e}")))?;
    let manifest = Manifest::from_source(&cu).map_err(|d| d.with_source(&name, &cu))?;
    let opts = manifest.cuda.clone().unwrap_or_default();
    let abs = std::fs::canonicalize(path).map_err(|e| whole(path, format!("cannot read program: {e}")))?;
    let (ptx_path, ptx) = compile(&abs, &opts).map_err(|msg| whole(path, msg))?;
    let ptx_name = ptx_path.display().to_string();
    let module = parser::parse_module(&ptx).map_err(|d| d.with_source(&ptx_name, &ptx))?;
    let mut prog = Program::assemble(&name, &ptx, &ptx_name, module, manifest, &cu)?;
    prog.cuda = Some(CudaInput { file: abs.display().to_string(), ptx_path: ptx_name });
    Ok(prog)
}

/// The nvcc command line for `cu` (without the output file).
fn nvcc_args(cu: &Path, opts: &crate::manifest::CudaOptions, tools: &Toolchain) -> Vec<String> {
    let dir = cu.parent().unwrap_or(Path::new("."));
    let mut a = vec![
        format!("-arch={}", opts.arch.as_deref().unwrap_or(DEFAULT_ARCH)),
        "-ptx".into(),
        "-lineinfo".into(),
        "-std=c++17".into(),
        "--expt-relaxed-constexpr".into(),
    ];
    for f in &opts.flags {
        // `-Irel` is relative to the .cu file.
        match f.strip_prefix("-I") {
            Some(p) if !p.is_empty() && !Path::new(p).is_absolute() => a.push(format!("-I{}", dir.join(p).display())),
            _ => a.push(f.clone()),
        }
    }
    if opts.cutlass {
        for inc in &tools.cutlass_includes {
            a.push(format!("-I{}", inc.display()));
        }
    }
    // by its file name (nvcc runs in its folder): `__FILE__`, which `assert` prints, is then the
    // same in every checkout
    a.push(cu.file_name().map_or_else(|| cu.display().to_string(), |n| n.to_string_lossy().into_owned()));
    a
}

/// The compiler and where its own headers are.
struct Toolchain {
    nvcc: PathBuf,
    /// Folders whose files are covered by the version in the cache key (not hashed one by one).
    fixed: Vec<PathBuf>,
    cutlass_includes: Vec<PathBuf>,
    version: String,
    /// The installed `nvidia-cutlass` package (its dist-info folder's name), or empty.
    cutlass_version: String,
}

/// What a committed PTX file stores in place of the `.cu` file's absolute path.
pub const CU_PLACEHOLDER: &str = "@HOPSYNC_CU@";
/// ... and in place of [`cache_dir`] (the CUTLASS headers' folder in nvcc's `.file` directives).
pub const CACHE_PLACEHOLDER: &str = "@HOPSYNC_CACHE@";

/// `ptx`, nvcc's output for the `.cu` file `cu` (as its `.file` directive names it), with this
/// machine's paths in it (the `.cu` file's, the cache folder's with the toolchain's headers)
/// replaced by [`CU_PLACEHOLDER`] and [`CACHE_PLACEHOLDER`]: the same program reads the same in
/// every checkout and home folder.
pub fn portable_ptx(ptx: &str, cu: &str) -> String {
    ptx.replace(cu, CU_PLACEHOLDER).replace(&cache_dir().display().to_string(), CACHE_PLACEHOLDER)
}

/// What a hash of `ptx` (nvcc's output for `cu`) covers: [`portable_ptx`] without the
/// `.debug_str` section (`-lineinfo`'s names of inlined functions) and with the mangled names'
/// internal-linkage and anonymous-namespace components (`53_INTERNAL_9c4eacc1_22_k_cu_6895ab27`,
/// `50_GLOBAL__N__5032a287_17_k_cu_bf1c9415`), which nvcc derives from the `.cu` file's absolute
/// path and the compile, replaced. Not PTX to run: only to hash.
pub fn fingerprint_ptx(ptx: &str, cu: &str) -> String {
    let mut p = String::with_capacity(ptx.len());
    let mut in_debug_str = false;
    for line in portable_ptx(ptx, cu).split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with(".section") && t.ends_with(".debug_str") {
            in_debug_str = true;
        } else if in_debug_str && t == "}" {
            in_debug_str = false;
        } else if !in_debug_str {
            p.push_str(line);
        }
    }
    // a mangled name's component `<length>_INTERNAL_...` or `<length>_GLOBAL__N_...` (an
    // internal-linkage or anonymous namespace: nvcc names it after hashes of the file's path and
    // of the compile) becomes one placeholder, its length prefix included
    let b = p.as_bytes();
    let mut out = String::with_capacity(p.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()) {
            let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let rest = &p[i + digits..];
            if rest.starts_with("_INTERNAL_") || rest.starts_with("_GLOBAL__N_") {
                // the length is a suffix of the digits (`3__450_GLOBAL__N_...`: the name `__4`,
                // then 50): the longest one the text holds, at least the marker and a hash
                let fits = (0..digits).find_map(|k| p[i + k..i + digits].parse::<usize>().ok().filter(|&l| (18..=rest.len()).contains(&l) && rest.is_char_boundary(l)).map(|l| (k, l)));
                if let Some((k, len)) = fits {
                    out.push_str(&p[copied..i + k]);
                    out.push_str("@HOPSYNC_ID@");
                    i += digits + len;
                    copied = i;
                    continue;
                }
            }
            i += digits;
            continue;
        }
        i += 1;
    }
    out.push_str(&p[copied..]);
    out
}

/// The machine-independent key of a committed PTX file (module doc). The manifest's `//!` lines
/// count as blank lines (nvcc sees comments; only the line numbers matter), so clients that differ
/// only in their manifests (two kernels of one example) share one file.
fn portable_key(tools: &Toolchain, opts: &crate::manifest::CudaOptions, text: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [tools.version.as_str(), tools.cutlass_version.as_str(), opts.arch.as_deref().unwrap_or(DEFAULT_ARCH)].into_iter().chain(opts.flags.iter().map(String::as_str)) {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hash_without_manifest(&mut h, text);
    hex(&h.finalize())
}

/// Hashes a `.cu` text with its manifest lines blanked: the lines stay (nvcc's `.loc` line numbers
/// follow them), their TOML does not matter to nvcc.
fn hash_without_manifest(h: &mut Sha256, text: &[u8]) {
    for line in text.split(|&b| b == b'\n') {
        if !line.starts_with(b"//!") {
            h.update(line);
        }
        h.update([b'\n']);
    }
}

/// The committed PTX's header line for `key`.
fn ptx_header(key: &str, tools: &Toolchain) -> String {
    let release = tools.version.lines().rev().find(|l| l.contains("release")).unwrap_or("").trim();
    format!("// hopsync: nvcc PTX, key {key}, {release}")
}

/// Compiles `cu` (an absolute path) to PTX, through the cache; returns the PTX file and text.
/// With `[cuda] ptx`, the committed PTX when it is current (module doc).
pub fn compile(cu: &Path, opts: &crate::manifest::CudaOptions) -> Result<(PathBuf, String), String> {
    let cache = cache_dir();
    let tools = toolchain(&cache, opts.cutlass)?;
    let text = std::fs::read(cu).map_err(|e| format!("cannot read {}: {e}", cu.display()))?;
    let Some(rel) = &opts.ptx else { return compile_cached(cu, opts, &tools, &cache, &text) };
    let committed = cu.parent().unwrap_or(Path::new(".")).join(rel);
    let header = ptx_header(&portable_key(&tools, opts, &text), &tools);
    let (cu_path, cache_path) = (cu.display().to_string(), cache.display().to_string());
    if let Ok(t) = std::fs::read_to_string(&committed) {
        if t.lines().next() == Some(header.as_str()) {
            return Ok((committed, t.replace(CU_PLACEHOLDER, &cu_path).replace(CACHE_PLACEHOLDER, &cache_path)));
        }
    }
    let (ptx, t) = compile_cached(cu, opts, &tools, &cache, &text)?;
    if std::env::var_os("HOPSYNC_WRITE_PTX").is_some_and(|v| v == "1") {
        let body = format!("{header}\n{}", portable_ptx(&t, &cu_path));
        std::fs::write(&committed, body).map_err(|e| format!("cannot write {}: {e}", committed.display()))?;
    } else {
        eprintln!("hopsync: {} is not the PTX of {} as it is now (nvcc, CUTLASS or the source changed); compiled instead (HOPSYNC_WRITE_PTX=1 rewrites it)", committed.display(), cu.display());
    }
    Ok((ptx, t))
}

/// Compiles through the cache (module doc).
fn compile_cached(cu: &Path, opts: &crate::manifest::CudaOptions, tools: &Toolchain, cache: &Path, text: &[u8]) -> Result<(PathBuf, String), String> {
    let args = nvcc_args(cu, opts, tools);
    let mut h = Sha256::new();
    h.update(tools.version.as_bytes());
    h.update(tools.cutlass_version.as_bytes());
    for a in &args {
        h.update(a.as_bytes());
        h.update([0]);
    }
    // the command line names the file only; its folder is in nvcc's `.file` directives
    h.update(cu.display().to_string().as_bytes());
    h.update([0]);
    // an edit of the manifest alone (a fill range, a launch shape) keeps the PTX: CUTLASS modules
    // take minutes to compile
    hash_without_manifest(&mut h, text);
    let key = hex(&h.finalize());
    let dir = cache.join("ptx");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create the PTX cache {}: {e}", dir.display()))?;
    let ptx = dir.join(format!("{key}.ptx"));
    let deps = dir.join(format!("{key}.deps"));
    if let Some(t) = cached(&ptx, &deps) {
        return Ok((ptx, t));
    }
    let _lock = lock(cache)?;
    if let Some(t) = cached(&ptx, &deps) {
        return Ok((ptx, t));
    }
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    let dfile = dir.join(format!("{key}.{}.d", std::process::id()));
    let out = Command::new(&tools.nvcc)
        .args(&args)
        .arg("-o")
        .arg(&tmp)
        .arg("-MD")
        .arg("-MF")
        .arg(&dfile)
        .current_dir(cu.parent().unwrap_or(Path::new(".")))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tools.nvcc.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&dfile);
        return Err(format!(
            "nvcc could not compile {} ({} {}):\n{}{}",
            cu.display(),
            tools.nvcc.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let d = std::fs::read_to_string(&dfile).unwrap_or_default();
    let _ = std::fs::remove_file(&dfile);
    // nvcc ran in the .cu's folder: a relative prerequisite (a header beside it) is there; the
    // .cu itself is in the key
    let dir = cu.parent().unwrap_or(Path::new("."));
    let listed: Vec<String> = dep_files(&d)
        .into_iter()
        .map(|p| if Path::new(&p).is_absolute() { PathBuf::from(p) } else { dir.join(p) })
        .filter(|p| p != cu && !p.starts_with("/usr/") && !tools.fixed.iter().any(|f| p.starts_with(f)))
        .filter_map(|p| file_hash(&p).map(|h| format!("{h} {}", p.display())))
        .collect();
    std::fs::write(&deps, listed.join("\n")).map_err(|e| format!("cannot write {}: {e}", deps.display()))?;
    std::fs::rename(&tmp, &ptx).map_err(|e| format!("cannot write {}: {e}", ptx.display()))?;
    let t = std::fs::read_to_string(&ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    Ok((ptx, t))
}

/// The cached PTX, if present and every file it was compiled from is unchanged.
fn cached(ptx: &Path, deps: &Path) -> Option<String> {
    let d = std::fs::read_to_string(deps).ok()?;
    for line in d.lines().filter(|l| !l.is_empty()) {
        let (h, p) = line.split_once(' ')?;
        if file_hash(Path::new(p)).as_deref() != Some(h) {
            return None;
        }
    }
    std::fs::read_to_string(ptx).ok()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn file_hash(p: &Path) -> Option<String> {
    std::fs::read(p).ok().map(|b| hex(&Sha256::digest(&b)))
}

/// The prerequisites of a make-style dependency file (`out : a b \` ...).
fn dep_files(d: &str) -> Vec<String> {
    let joined = d.replace("\\\n", " ");
    let rest = joined.split_once(": ").map(|(_, r)| r).unwrap_or("");
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// An exclusive lock on the cache (released when dropped).
fn lock(cache: &Path) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(cache).map_err(|e| format!("cannot create the cache {}: {e}", cache.display()))?;
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(cache.join("lock")).map_err(|e| format!("cannot lock the cache {}: {e}", cache.display()))?;
    f.lock().map_err(|e| format!("cannot lock the cache {}: {e}", cache.display()))?;
    Ok(f)
}

/// `nvcc --version`'s last line (the release and build).
fn version_of(nvcc: &Path) -> Option<String> {
    let out = Command::new(nvcc).arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The pip-installed toolchain in the cache: nvcc, and the CUTLASS folders if installed.
fn pip_nvcc(cache: &Path) -> PathBuf {
    cache.join("cuda").join("nvidia").join("cu13").join("bin").join("nvcc")
}

/// The `nvidia_cutlass-X.dist-info` folder's name in the cache (the package's version).
fn cutlass_dist_info(cache: &Path) -> String {
    let Ok(rd) = std::fs::read_dir(cache.join("cuda")) else { return String::new() };
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("nvidia_cutlass-") && n.ends_with(".dist-info")).collect();
    names.sort();
    names.join(" ")
}

fn cutlass_root(cache: &Path) -> PathBuf {
    cache.join("cuda").join("cutlass_library").join("source")
}

/// Finds nvcc (module doc), installing the PyPI packages when there is none.
fn toolchain(cache: &Path, cutlass: bool) -> Result<Toolchain, String> {
    let from_env = std::env::var_os("HOPSYNC_NVCC").map(PathBuf::from);
    let on_path = || {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvcc")).find(|c| c.is_file()))
    };
    let pip = pip_nvcc(cache);
    let nvcc = match from_env.or_else(on_path) {
        Some(n) => n,
        None => {
            if !pip.is_file() {
                let _lock = lock(cache)?;
                if !pip.is_file() {
                    pip_install(cache, CUDA_PACKAGES)?;
                }
            }
            pip.clone()
        }
    };
    let version = version_of(&nvcc).ok_or_else(|| format!("{} does not run (`nvcc --version` failed); set HOPSYNC_NVCC to a working nvcc", nvcc.display()))?;
    let mut cutlass_includes = Vec::new();
    if cutlass {
        let root = cutlass_root(cache);
        if !root.join("include").is_dir() {
            let _lock = lock(cache)?;
            if !root.join("include").is_dir() {
                // only its headers and examples are used: not its Python dependencies (scipy, ...)
                pip_install(cache, &["--no-deps", CUTLASS_PACKAGE])?;
            }
        }
        cutlass_includes = vec![root.join("include"), root.join("tools/util/include"), root.join("examples/common")];
    }
    let mut fixed: Vec<PathBuf> = vec![cache.join("cuda")];
    if let Some(tk) = nvcc.parent().and_then(|b| b.parent()) {
        fixed.push(tk.to_path_buf());
    }
    let cutlass_version = if cutlass { cutlass_dist_info(cache) } else { String::new() };
    Ok(Toolchain { nvcc, fixed, cutlass_includes, version: format!("{version}\n{}", cutlass as u8), cutlass_version })
}

/// NVIDIA's PTX assembler, the judge of what real PTX is: `$HOPSYNC_PTXAS`, else the ptxas beside
/// the nvcc hopsync compiles with (module doc; the PyPI packages are installed on first use as
/// for nvcc). Its verdicts are cached by content hash in [`cache_dir`]`/ptxas`.
pub struct Ptxas {
    /// The executable.
    pub path: PathBuf,
    /// `ptxas --version`, part of every cache key.
    version: String,
}

/// What ptxas made of a PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxasVerdict {
    /// It assembled.
    pub ok: bool,
    /// Its messages (the input file named `<ptx>`).
    pub output: String,
}

impl Ptxas {
    /// Finds ptxas (see [`Ptxas`]).
    pub fn find() -> Result<Ptxas, String> {
        let path = match std::env::var_os("HOPSYNC_PTXAS") {
            Some(p) => PathBuf::from(p),
            None => {
                let tools = toolchain(&cache_dir(), false)?;
                tools.nvcc.with_file_name("ptxas")
            }
        };
        let out = Command::new(&path).arg("--version").output().map_err(|e| format!("cannot run {}: {e}; set HOPSYNC_PTXAS to a ptxas", path.display()))?;
        if !out.status.success() {
            return Err(format!("{} --version failed; set HOPSYNC_PTXAS to a working ptxas", path.display()));
        }
        Ok(Ptxas { path, version: String::from_utf8_lossy(&out.stdout).trim().to_string() })
    }

    /// Assembles `ptx` for `-arch=ARCH` (its `.target` when `arch` is None), through the cache.
    pub fn check(&self, ptx: &str, arch: Option<&str>) -> Result<PtxasVerdict, String> {
        let arch = arch.map(str::to_string).or_else(|| ptx_target(ptx)).unwrap_or_else(|| "sm_90".into());
        let mut h = Sha256::new();
        for part in [self.version.as_str(), arch.as_str(), ptx] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let key = hex(&h.finalize());
        let dir = cache_dir().join("ptxas");
        for (ok, ext) in [(true, "ok"), (false, "rejected")] {
            if let Ok(output) = std::fs::read_to_string(dir.join(format!("{key}.{ext}"))) {
                return Ok(PtxasVerdict { ok, output });
            }
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Unique per call: two threads may judge the same text (clients sharing committed PTX).
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = |ext: &str| dir.join(format!("{key}.{}.{call}.{ext}", std::process::id()));
        let input = tmp("ptx");
        let cubin = tmp("cubin");
        std::fs::write(&input, ptx).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
        let out = Command::new(&self.path).arg(format!("-arch={arch}")).arg(&input).arg("-o").arg(&cubin).output();
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&cubin);
        let out = out.map_err(|e| format!("cannot run {}: {e}", self.path.display()))?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)).replace(&input.display().to_string(), "<ptx>");
        let v = PtxasVerdict { ok: out.status.success(), output: text };
        let file = dir.join(format!("{key}.{}", if v.ok { "ok" } else { "rejected" }));
        let part = tmp("part");
        std::fs::write(&part, &v.output).and_then(|_| std::fs::rename(&part, &file)).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(v)
    }
}

/// The architecture of a PTX module's `.target` directive (`sm_90a` of `.target sm_90a, debug`).
pub fn ptx_target(ptx: &str) -> Option<String> {
    ptx.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(".target")?;
        rest.split(|c: char| c == ',' || c.is_whitespace()).find(|t| !t.is_empty()).map(str::to_string)
    })
}

/// `python3 -m pip install --target CACHE/cuda PACKAGES`.
fn pip_install(cache: &Path, packages: &[&str]) -> Result<(), String> {
    let target = cache.join("cuda");
    eprintln!("hopsync: installing {} with pip into {} (first use; no GPU needed)", packages.join(" "), target.display());
    let out = Command::new("python3")
        // pip refuses installs into a system Python (PEP 668) unless told; --target touches
        // only hopsync's cache
        .env("PIP_BREAK_SYSTEM_PACKAGES", "1")
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "--target"])
        .arg(&target)
        .args(packages)
        .output();
    let hint = format!(
        "hopsync needs nvcc to compile CUDA C++: install the CUDA toolkit (nvcc on PATH, or HOPSYNC_NVCC=/path/to/nvcc), or let hopsync install the PyPI packages with `python3 -m pip install --target {} {}` (needs python3, pip and a network)",
        target.display(),
        packages.join(" ")
    );
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("pip could not install {}:\n{}\n{hint}", packages.join(" "), String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("cannot run python3 -m pip ({e})\n{hint}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_ptx_names_no_path_of_this_machine() {
        let cache = cache_dir().display().to_string();
        let ptx = format!(".file\t1 \"/some/checkout/k.cu\"\n.file\t2 \"{cache}/cuda/include/cuda/pipeline\"\n");
        let p = portable_ptx(&ptx, "/some/checkout/k.cu");
        assert_eq!(p, format!(".file\t1 \"{CU_PLACEHOLDER}\"\n.file\t2 \"{CACHE_PLACEHOLDER}/cuda/include/cuda/pipeline\"\n"));
        // the same PTX compiled in another checkout reads the same
        assert_eq!(portable_ptx(&ptx.replace("/some/checkout", "/elsewhere"), "/elsewhere/k.cu"), p);
    }

    #[test]
    fn a_fingerprint_ignores_the_path_hash_in_internal_names() {
        let a = ".global .b8 _ZN34_INTERNAL_9c4eacc1_4_k_cu_6895ab274cuda3std6ignoreE[1];\n.file\t1 \"/a/k.cu\"\n";
        let b = ".global .b8 _ZN39_INTERNAL_43da35e1_4_k_cu_0c7080eb_48444cuda3std6ignoreE[1];\n.file\t1 \"/b/c/k.cu\"\n";
        assert_eq!(fingerprint_ptx(a, "/a/k.cu"), fingerprint_ptx(b, "/b/c/k.cu"));
        assert!(fingerprint_ptx(a, "/a/k.cu").starts_with(".global .b8 _ZN@HOPSYNC_ID@4cuda3std6ignoreE[1];"));
        let g = |h: &str| format!("_ZN4cuda3std3__450_GLOBAL__N__{h}_17_cg_reduce_scan_cu_bf1c94156ignoreE");
        assert_eq!(fingerprint_ptx(&g("5032a287"), "/a/k.cu"), fingerprint_ptx(&g("13db91be"), "/a/k.cu"));
        // anything else named _INTERNAL_ stays
        assert_eq!(fingerprint_ptx("_INTERNAL_xyz 12_INTERNAL_x", "/a/k.cu"), "_INTERNAL_xyz 12_INTERNAL_x");
        // -lineinfo's debug strings (the same names, byte by byte) are left out
        let dbg = |x: &str| format!("ret;\n}}\n\t.section\t.debug_str\n\t{{\n$L__info_string0:\n.b8 {x},0\n\n\t}}\n");
        assert_eq!(fingerprint_ptx(&dbg("95,57"), "/a/k.cu"), fingerprint_ptx(&dbg("95,98"), "/a/k.cu"));
        assert_eq!(fingerprint_ptx(&dbg("95,57"), "/a/k.cu"), "ret;\n}\n");
    }

    #[test]
    fn the_target_is_read_from_the_directive() {
        assert_eq!(ptx_target(".version 8.0\n  .target sm_90a, debug // x\n").as_deref(), Some("sm_90a"));
        assert_eq!(ptx_target(".version 8.0\n.target\tsm_90\n").as_deref(), Some("sm_90"));
        assert_eq!(ptx_target(".version 8.0\n"), None);
    }

    #[test]
    fn dependency_files_are_read_from_make_rules() {
        let d = "/tmp/x.ptx : a.cu \\\n    /usr/include/x.h \\\n    my\\ dir/b.h\n";
        assert_eq!(dep_files(d), vec!["a.cu", "/usr/include/x.h", "my dir/b.h"]);
    }
}
