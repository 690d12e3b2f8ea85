//! The launch manifest: TOML written in the leading `//!` comment lines of a program.
//!
//! ```text
//! //! description = "what the program shows"
//! //! [launch]
//! //! grid = [1, 1, 1]          # CTAs per grid, x y z
//! //! block = [64, 1, 1]        # threads per CTA
//! //! cluster = [1, 1, 1]       # CTAs per cluster (optional, default 1 1 1)
//! //! dynamic_smem = 0          # bytes of dynamic shared memory
//! //! [[buffer]]
//! //! name = "out"
//! //! bytes = 256
//! //! fill = "iota"             # zeros | iota | random | values | hex
//! //! type = "u32"              # element type for iota/values/expect (f16, bf16, f32, ... too)
//! //! range = [-8, 8]           # (random) integers in [lo, hi] stored as `type`, not raw bytes
//! //! output = true
//! //! expect = [0, 1, 2]        # expected contents (elements of `type`), or expect_hex = "..."
//! //! timing = true             # (instead of expect) u64 %clock64 samples for `hopsync calibrate`
//! //! figures = ["a", "b"]      # (timing) the samples split into equal groups, one figure each
//! //! [[param]]
//! //! name = "out_ptr"          # a .param of the entry, in declaration order
//! //! buffer = "out"            # or value = 7, or tensormap = "tmap_name", or fields:
//! //! [[param.field]]           # a struct passed by value (`.param .align 64 .b8 p[K]`)
//! //! offset = 0                # bytes into the param
//! //! tensormap = "tmap_in"     # or buffer = "name", or value = 1.5 with type = "f32"
//! //! [[tensormap]]             # a CUtensorMap the launcher encodes (cuTensorMapEncodeTiled/Im2col)
//! //! name = "tmap_in"
//! //! buffer = "out"            # globalAddress = this buffer's address (+ offset, default 0)
//! //! data_type = "int32"       # then every TensorMapSpec field but global_address
//! //! rank = 2                  # (firmware/src/tensormap.rs module doc: names and spellings)
//! //! global_dim = [64, 32]
//! //! global_strides = [256]
//! //! box_dim = [16, 8]
//! //! element_strides = [1, 1]
//! ```
//! Every field is checked; unknown fields are errors. The manifest lines are TOML once the
//! `//!` prefix (and one following space) is removed.
//!
//! A `[[tensormap]]` is validated with the encoder ([`crate::tensormap::TensorMap::new`]) when the
//! manifest is read, with `globalAddress` set to its buffer's launch address (buffers are laid
//! out by [`Manifest::buffer_bases`]); a violated rule is an error naming the rule, at the
//! offending field. A `[[param]]` with `tensormap = "name"` receives the map's 128-byte image
//! ([`Manifest::tensormap_image`]): the kernel declares it `.param .align 64 .b8 name[128]`, as
//! nvcc does for a `const __grid_constant__ CUtensorMap` argument, and passes its generic address
//! (`mov.u64` + `cvta.param`) to the TMA instructions.

use crate::diag::Diag;
use crate::ir::Loc;
use crate::tensormap::{TensorMap, TensorMapError, TensorMapSpec, TENSOR_MAP_BYTES};
use serde::{Deserialize, Serialize};

/// Launch shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    /// CTAs in the grid, x y z.
    pub grid: [u32; 3],
    /// Threads per CTA, x y z.
    pub block: [u32; 3],
    /// CTAs per cluster, x y z.
    #[serde(default = "one3")]
    pub cluster: [u32; 3],
    /// Dynamic shared memory bytes per CTA.
    #[serde(default)]
    pub dynamic_smem: u32,
}
fn one3() -> [u32; 3] {
    [1, 1, 1]
}

/// How a buffer is filled before launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// All zero bytes.
    #[default]
    Zeros,
    /// Element i = start + i * step, of `type`.
    Iota,
    /// Bytes from a xorshift64* stream seeded with `seed` (elements in `range`, when given).
    Random,
    /// The `values` list, elements of `type`, rest zero.
    Values,
    /// The `hex` string, rest zero.
    Hex,
}

/// A global-memory buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    /// Name, referenced by params.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Initial contents.
    #[serde(default)]
    pub fill: Fill,
    /// Element type for iota / values / expect / a random `range` (`u8` `u16` `u32` `u64` `s32`
    /// `s64` `f16` `bf16` `f32` `f64`).
    #[serde(default = "default_ty", rename = "type")]
    pub ty: String,
    /// iota start.
    #[serde(default)]
    pub start: i64,
    /// iota step.
    #[serde(default = "one")]
    pub step: i64,
    /// random seed.
    #[serde(default)]
    pub seed: u64,
    /// random: integers drawn uniformly from `[lo, hi]` and stored as elements of `type` (as
    /// CUTLASS's `BlockFillRandomUniform` with 0 fraction bits fills GEMM operands: small integers
    /// keep every product and sum exact in f16/bf16/tf32/f32); without it, random bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[i64; 2]>,
    /// values fill.
    #[serde(default)]
    pub values: Vec<f64>,
    /// hex fill.
    #[serde(default)]
    pub hex: String,
    /// Whether the buffer is an output (reported and compared).
    #[serde(default)]
    pub output: bool,
    /// Expected contents as elements of `type` (prefix of the buffer).
    #[serde(default)]
    pub expect: Option<Vec<f64>>,
    /// Expected contents as hex bytes (prefix of the buffer).
    #[serde(default)]
    pub expect_hex: Option<String>,
    /// The buffer holds timing samples (`u64` cycle deltas read with `%clock64`), not exact
    /// results: engines and silicon legitimately differ, so it is never compared between runs
    /// or engines and may not have `expect`; `hopsync calibrate` summarizes it (median).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timing: bool,
    /// For a timing buffer: names of the figures it holds, in order; the samples are split into
    /// that many equal consecutive groups. Empty: one figure named after the buffer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<String>,
}
fn default_ty() -> String {
    "u32".into()
}
fn one() -> i64 {
    1
}

/// A kernel parameter value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// The `.param` name in the entry.
    pub name: String,
    /// Address of this buffer.
    #[serde(default)]
    pub buffer: Option<String>,
    /// A scalar value.
    #[serde(default)]
    pub value: Option<i64>,
    /// The 128-byte image of this `[[tensormap]]` (the param is `.param .align 64 .b8 p[128]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensormap: Option<String>,
    /// A struct passed by value (`.param .align N .b8 p[K]`, as CUTLASS and CuTe pass their
    /// `Params`): its bytes, field by field (`[[param.field]]`); bytes no field covers are 0.
    #[serde(default, rename = "field", skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<ParamField>,
}

/// One field of a struct parameter (`[[param.field]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamField {
    /// Byte offset in the parameter.
    pub offset: u64,
    /// The address of this buffer (8 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<String>,
    /// A scalar of `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Number>,
    /// The scalar's type (`u8` `s8` `u16` `s16` `u32` `s32` `u64` `s64` `f32` `f64`).
    #[serde(default = "default_ty", rename = "type")]
    pub ty: String,
    /// The 128-byte image of this `[[tensormap]]` (a `CUtensorMap` member, 64-byte aligned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensormap: Option<String>,
}

/// A number as TOML writes it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Number {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Float(x) => write!(f, "{x}"),
        }
    }
}

/// What a parameter's bytes are made of: literal bytes, a buffer's launch address (8 bytes) or a
/// tensor map's 128-byte image, each at a byte offset in the parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece<'m> {
    /// Literal bytes.
    Bytes(u64, Vec<u8>),
    /// The launch address of a buffer.
    Buffer(u64, &'m str),
    /// The image of a `[[tensormap]]`.
    TensorMap(u64, &'m str),
}

impl Piece<'_> {
    /// The byte range the piece covers.
    pub fn range(&self) -> std::ops::Range<u64> {
        match self {
            Piece::Bytes(o, b) => *o..*o + b.len() as u64,
            Piece::Buffer(o, _) => *o..*o + 8,
            Piece::TensorMap(o, _) => *o..*o + TENSOR_MAP_BYTES as u64,
        }
    }
}

impl Param {
    /// The pieces of the parameter's bytes (validated manifests only).
    pub fn pieces(&self) -> Vec<Piece<'_>> {
        if !self.fields.is_empty() {
            return self.fields.iter().filter_map(ParamField::piece).collect();
        }
        match (&self.buffer, self.value, &self.tensormap) {
            (Some(b), _, _) => vec![Piece::Buffer(0, b)],
            (None, Some(v), _) => vec![Piece::Bytes(0, v.to_le_bytes().to_vec())],
            (None, None, Some(t)) => vec![Piece::TensorMap(0, t)],
            (None, None, None) => vec![],
        }
    }
}

impl ParamField {
    fn piece(&self) -> Option<Piece<'_>> {
        match (&self.buffer, &self.value, &self.tensormap) {
            (Some(b), None, None) => Some(Piece::Buffer(self.offset, b)),
            (None, Some(v), None) => Some(Piece::Bytes(self.offset, encode_number(&self.ty, *v)?)),
            (None, None, Some(t)) => Some(Piece::TensorMap(self.offset, t)),
            _ => None,
        }
    }
}

/// A number as `ty`, little-endian; None when it does not fit (a float for an integer type, an
/// integer out of range).
pub fn encode_number(ty: &str, v: Number) -> Option<Vec<u8>> {
    let n = elem_bytes(ty)?;
    match (ty, v) {
        ("f16" | "bf16", Number::Int(i)) => Some(encode_elem(ty, i as f64)),
        ("f16" | "bf16", Number::Float(f)) => Some(encode_elem(ty, f)),
        ("f32", Number::Int(i)) => Some((i as f32).to_le_bytes().to_vec()),
        ("f32", Number::Float(f)) => Some((f as f32).to_le_bytes().to_vec()),
        ("f64", Number::Int(i)) => Some((i as f64).to_le_bytes().to_vec()),
        ("f64", Number::Float(f)) => Some(f.to_le_bytes().to_vec()),
        (_, Number::Float(_)) => None,
        (t, Number::Int(i)) => {
            let bits = 8 * n as u32;
            let fits = if t.starts_with('s') { bits == 64 || (i >= -(1i64 << (bits - 1)) && i < (1i64 << (bits - 1))) } else { i >= 0 && (bits == 64 || i < (1i64 << bits)) };
            fits.then(|| i.to_le_bytes()[..n].to_vec())
        }
    }
}

/// A `[[tensormap]]`: the arguments of `cuTensorMapEncodeTiled` / `cuTensorMapEncodeIm2col` for a
/// map over one of the manifest's buffers. Written as `name`, `buffer`, an optional byte `offset`
/// into the buffer, and every [`TensorMapSpec`] field except `global_address`, which is the
/// buffer's launch address plus `offset` (filled in when the manifest is read).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorMapDecl {
    /// Name, referenced by params.
    pub name: String,
    /// The buffer whose address is `globalAddress`.
    pub buffer: String,
    /// Byte offset of `globalAddress` into the buffer.
    pub offset: u64,
    /// The encoder arguments (`global_address` resolved once the manifest is validated).
    #[serde(flatten)]
    pub spec: TensorMapSpec,
}

impl<'de> Deserialize<'de> for TensorMapDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = toml::Table::deserialize(d)?;
        let mut text = |k: &str| match t.remove(k) {
            Some(toml::Value::String(v)) => Ok(v),
            Some(_) => Err(D::Error::custom(format!("tensormap `{k}` must be a string"))),
            None => Err(D::Error::custom(format!("tensormap needs `{k}`"))),
        };
        let name = text("name")?;
        let buffer = text("buffer")?;
        let offset = match t.remove("offset") {
            None => 0,
            Some(toml::Value::Integer(v)) if v >= 0 => v as u64,
            Some(_) => return Err(D::Error::custom(format!("tensormap `{name}`: offset must be a non-negative integer"))),
        };
        if t.contains_key("global_address") {
            return Err(D::Error::custom(format!(
                "tensormap `{name}`: `global_address` is not a manifest field: globalAddress is the address of `buffer` (plus `offset`)"
            )));
        }
        t.insert("global_address".into(), toml::Value::Integer(0));
        let spec = TensorMapSpec::deserialize(toml::Value::Table(t)).map_err(|e| D::Error::custom(format!("tensormap `{name}`: {}", e.message())))?;
        Ok(TensorMapDecl { name, buffer, offset, spec })
    }
}

/// How hopsync compiles a `.cu` program (`[cuda]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CudaOptions {
    /// `-arch` (default `sm_90a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Extra nvcc flags (`-DNDEBUG`, `-std=c++20`, `-I...` relative to the `.cu` file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Add the include folders of the `nvidia-cutlass` PyPI package (CUTLASS, CuTe, its tools and
    /// examples); hopsync installs it into its toolchain cache on first use.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cutlass: bool,
    /// nvcc's PTX of this file, committed beside the sources for a compile that takes minutes
    /// (heavy CUTLASS instantiations): a path relative to the `.cu` file. It is used while its
    /// header's key (nvcc's version, the CUTLASS package's, the flags and the `.cu` text) matches;
    /// otherwise hopsync compiles, and `HOPSYNC_WRITE_PTX=1` rewrites it (crate::cuda).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptx: Option<String>,
}

/// The `[cuda]` table of the `//!` block that leads `src`, if it has one: what `hopsync init`
/// compiles with when the file names its options but has no complete manifest yet.
pub fn cuda_options_of(src: &str) -> Result<Option<CudaOptions>, String> {
    let m = ManifestText::new(src);
    if m.text.trim().is_empty() {
        return Ok(None);
    }
    let table: toml::Table = m.text.parse().map_err(|e: toml::de::Error| format!("bad manifest: {}", e.message()))?;
    match table.get("cuda") {
        None => Ok(None),
        Some(v) => CudaOptions::deserialize(v.clone()).map(Some).map_err(|e| format!("bad manifest: [cuda]: {}", e.message())),
    }
}

/// What a run does on undefined behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UbMode {
    /// Stop at the first finding.
    #[default]
    Error,
    /// Record findings and continue where the model can.
    Warn,
}

impl UbMode {
    /// Whether this is the default, [`UbMode::Error`].
    pub fn is_error(&self) -> bool {
        *self == UbMode::Error
    }
}

/// The whole manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// What the program shows.
    #[serde(default)]
    pub description: String,
    /// The entry to launch when the module has several (`.entry` name as in the PTX, mangled, or
    /// its demangled C++ name, with or without the parameter list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Compiling a `.cu` program (ignored for `.ptx`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaOptions>,
    /// Launch shape.
    pub launch: Launch,
    /// Whether outputs depend on thread interleaving (then compared on order-independent facts).
    #[serde(default)]
    pub interleaving_dependent: bool,
    /// What undefined behaviour does when the program runs (`ub = "warn"`: the program is known
    /// to do something PTX leaves undefined, and runs on, as with `--ub warn`): the default of
    /// `hopsync run` and `hopsync cosim` without `--ub`, and the mode of `hopsync gpu replay`,
    /// which compares such a program's run with its silicon trace.
    #[serde(default, skip_serializing_if = "UbMode::is_error")]
    pub ub: UbMode,
    /// Global buffers, allocated in this order.
    #[serde(default, rename = "buffer")]
    pub buffers: Vec<Buffer>,
    /// Parameter values.
    #[serde(default, rename = "param")]
    pub params: Vec<Param>,
    /// Tensor maps (CUtensorMap objects) over the buffers, passed to the kernel as params.
    #[serde(default, rename = "tensormap")]
    pub tensormaps: Vec<TensorMapDecl>,
}

/// Launch address of the first global buffer (docs/DESIGN.md address spaces).
pub const GLOBAL_BASE: u64 = 0x0000_0001_0000_0000;

/// The largest grid the engines model (every CTA is simulated, with its shared memory).
pub const MAX_CTAS: u64 = 4096;

/// The manifest's TOML text (the `//!` lines with the prefix removed) and, per TOML line, where it
/// sits in the source: its 1-based source line and the byte length of the stripped prefix.
struct ManifestText<'s> {
    src: &'s str,
    text: String,
    lines: Vec<(u32, usize)>,
}

impl<'s> ManifestText<'s> {
    fn new(src: &'s str) -> ManifestText<'s> {
        let mut text = String::new();
        let mut lines = Vec::new();
        for (i, l) in src.lines().enumerate() {
            let t = l.trim_start();
            if let Some(rest) = t.strip_prefix("//!") {
                let body = rest.strip_prefix(' ').unwrap_or(rest);
                text.push_str(body);
                text.push('\n');
                lines.push((i as u32 + 1, l.len() - body.len()));
            }
        }
        ManifestText { src, text, lines }
    }

    /// The source position of byte `off` of the TOML text (columns count characters).
    fn loc_of(&self, off: usize) -> Loc {
        let off = off.min(self.text.len());
        let before = &self.text[..off];
        let l = before.matches('\n').count().min(self.lines.len().saturating_sub(1));
        let c = off - before.rfind('\n').map(|p| p + 1).unwrap_or(0);
        let Some(&(src_line, prefix)) = self.lines.get(l) else {
            return Loc { line: 1, col: 1 };
        };
        let line_text = self.src.lines().nth(src_line as usize - 1).unwrap_or("");
        let byte = (prefix + c).min(line_text.len());
        let col = line_text.get(..byte).map(|p| p.chars().count()).unwrap_or(byte) + 1;
        Loc { line: src_line, col: col as u32 }
    }

    /// Where the manifest starts (its first `//!` line, after the prefix).
    fn first(&self) -> Loc {
        self.loc_of(0)
    }
}

/// The first `key = "TODO..."` of the manifest text (`hopsync init` writes them where it cannot
/// infer a value): the value's byte offset, the key and the placeholder text.
fn placeholder(text: &str) -> Option<(usize, String, String)> {
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        if let Some((k, v)) = line.split_once('=') {
            let lead = v.len() - v.trim_start().len();
            if let Some(rest) = v.trim_start().strip_prefix("\"TODO") {
                let body = rest.split('"').next().unwrap_or("");
                return Some((off + k.len() + 1 + lead, k.trim().to_string(), format!("TODO{body}")));
            }
        }
        off += line.len();
    }
    None
}

/// A manifest entry a diagnostic can point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'k> {
    /// A field of `[launch]`.
    Launch(&'k str),
    /// A field of the i-th `[[buffer]]`.
    Buffer(usize, &'k str),
    /// A field of the i-th `[[param]]`.
    Param(usize, &'k str),
    /// A field of the i-th `[[tensormap]]`.
    TensorMap(usize, &'k str),
    /// A top-level field (`kernel`).
    Top(&'k str),
}

type SpanTable = std::collections::BTreeMap<String, toml::Spanned<serde::de::IgnoredAny>>;

/// A second parse of the manifest that keeps the byte span of every field's value.
#[derive(Deserialize, Default)]
struct SpanDoc {
    #[serde(default)]
    kernel: Option<toml::Spanned<serde::de::IgnoredAny>>,
    #[serde(default)]
    launch: Option<SpanTable>,
    #[serde(default)]
    buffer: Vec<SpanTable>,
    #[serde(default)]
    param: Vec<SpanTable>,
    #[serde(default)]
    tensormap: Vec<SpanTable>,
}

/// Finds manifest fields in the source, for diagnostics that point at the offending line.
pub struct Locator<'s> {
    text: ManifestText<'s>,
    doc: SpanDoc,
}

impl<'s> Locator<'s> {
    /// Locates the manifest of `src` (a manifest that does not parse locates nothing but its start).
    pub fn new(src: &'s str) -> Locator<'s> {
        let text = ManifestText::new(src);
        let doc = toml::from_str(&text.text).unwrap_or_default();
        Locator { text, doc }
    }

    /// The value of `key`; if that field is absent, the first field of its table entry; if the
    /// entry is absent too, the manifest's first line.
    pub fn at(&self, key: Key<'_>) -> Loc {
        if let Key::Top(f) = key {
            let span = match f {
                "kernel" => self.doc.kernel.as_ref().map(|v| v.span()),
                _ => None,
            };
            return span.map(|s| self.text.loc_of(s.start)).unwrap_or_else(|| self.text.first());
        }
        let (table, field) = match key {
            Key::Top(_) => unreachable!("handled above"),
            Key::Launch(f) => (self.doc.launch.as_ref(), f),
            Key::Buffer(i, f) => (self.doc.buffer.get(i), f),
            Key::Param(i, f) => (self.doc.param.get(i), f),
            Key::TensorMap(i, f) => (self.doc.tensormap.get(i), f),
        };
        let Some(t) = table else { return self.text.first() };
        let span = t
            .get(field)
            .map(|v| v.span())
            .or_else(|| t.values().map(|v| v.span()).min_by_key(|s| s.start));
        span.map(|s| self.text.loc_of(s.start)).unwrap_or_else(|| self.text.first())
    }

    /// Just past the manifest's last line.
    pub fn end(&self) -> Loc {
        self.text.loc_of(self.text.text.len().saturating_sub(1))
    }
}

impl Manifest {
    /// Parses and validates the manifest of `src`.
    pub fn from_source(src: &str) -> Result<Manifest, Diag> {
        let mt = ManifestText::new(src);
        if mt.lines.is_empty() {
            return Err(Diag::new(
                Loc { line: 1, col: 1 },
                "missing launch manifest: expected `//!` TOML lines with a [launch] table",
            ));
        }
        if let Some((off, key, text)) = placeholder(&mt.text) {
            return Err(Diag::new(mt.loc_of(off), format!("bad manifest: `{key}` is still a `hopsync init` placeholder: {text}")));
        }
        let mut m: Manifest = toml::from_str(&mt.text).map_err(|e| {
            let loc = e.span().map(|s| mt.loc_of(s.start)).unwrap_or_else(|| mt.first());
            // toml's messages may span lines ("invalid array\nexpected `]`"); keep one line.
            let msg = e.message().trim().replace('\n', ": ");
            Diag::new(loc, format!("bad manifest: {msg}"))
        })?;
        let loc = Locator::new(src);
        m.validate(&|k| loc.at(k))?;
        m.resolve_tensormaps(&|k| loc.at(k))?;
        Ok(m)
    }

    /// Launch addresses of the buffers, in manifest order: from [`GLOBAL_BASE`], each buffer
    /// 256-byte aligned and followed by a 256-byte guard gap, so that overruns are out of
    /// bounds rather than in the next buffer (docs/DESIGN.md).
    pub fn buffer_bases(&self) -> Vec<u64> {
        let mut next = GLOBAL_BASE;
        self.buffers
            .iter()
            .map(|b| {
                let base = next;
                next += ((b.bytes + 255) & !255) + 256;
                base
            })
            .collect()
    }

    /// The first global address past the buffers and their guard gaps (where module-scope
    /// `.global` variables go).
    pub fn buffers_end(&self) -> u64 {
        GLOBAL_BASE + self.buffers.iter().map(|b| ((b.bytes + 255) & !255) + 256).sum::<u64>()
    }

    /// The 128-byte image of the `[[tensormap]]` named `name` (validated when the manifest was read).
    pub fn tensormap_image(&self, name: &str) -> Option<[u8; TENSOR_MAP_BYTES]> {
        let d = self.tensormaps.iter().find(|t| t.name == name)?;
        TensorMap::new(d.spec.clone()).ok().map(|m| m.encode())
    }

    /// Sets each tensor map's `globalAddress` from its buffer and validates it with the encoder.
    fn resolve_tensormaps(&mut self, at: &dyn Fn(Key<'_>) -> Loc) -> Result<(), Diag> {
        let bases = self.buffer_bases();
        let mut names = std::collections::HashSet::new();
        for (i, t) in self.tensormaps.iter_mut().enumerate() {
            let bad = |key: Key<'_>, msg: String| Err(Diag::new(at(key), format!("bad manifest: tensormap `{}`: {msg}", t.name)));
            if !names.insert(t.name.clone()) {
                return bad(Key::TensorMap(i, "name"), "declared twice".into());
            }
            let Some(b) = self.buffers.iter().position(|b| b.name == t.buffer) else {
                return bad(Key::TensorMap(i, "buffer"), format!("names unknown buffer `{}`", t.buffer));
            };
            if t.offset >= self.buffers[b].bytes {
                return bad(Key::TensorMap(i, "offset"), format!("offset {} is outside buffer `{}` ({} bytes)", t.offset, t.buffer, self.buffers[b].bytes));
            }
            t.spec.global_address = bases[b] + t.offset;
            if let Err(e) = TensorMap::new(t.spec.clone()) {
                let field = match rule_field(&e) {
                    "buffer" if t.offset != 0 => "offset",
                    f => f,
                };
                return bad(Key::TensorMap(i, field), format!("{e}"));
            }
        }
        Ok(())
    }

    fn validate(&self, at: &dyn Fn(Key<'_>) -> Loc) -> Result<(), Diag> {
        let l = &self.launch;
        let bad = |key: Key<'_>, msg: String| Err(Diag::new(at(key), format!("bad manifest: {msg}")));
        for (name, v) in [("grid", &l.grid), ("block", &l.block), ("cluster", &l.cluster)] {
            if v.contains(&0) {
                return bad(Key::Launch(name), format!("{name} dimensions must be >= 1"));
            }
        }
        // CUDA's launch limits for sm_90 (maxThreadsDim, maxGridSize).
        for (name, v, max) in [("block", &l.block, [1024, 1024, 64]), ("grid", &l.grid, [(1 << 31) - 1, 65535, 65535])] {
            if let Some(d) = (0..3).find(|&d| v[d] > max[d]) {
                return bad(Key::Launch(name), format!("{name} dimension {d} is {}; sm_90 allows at most {}", v[d], max[d]));
            }
        }
        let threads: u64 = l.block.iter().map(|&d| d as u64).product();
        if threads > 1024 {
            return bad(Key::Launch("block"), format!("block has {threads} threads; at most 1024 per CTA"));
        }
        let ctas: u64 = l.grid.iter().map(|&d| d as u64).product();
        if ctas > MAX_CTAS {
            return bad(Key::Launch("grid"), format!("grid has {ctas} CTAs; hopsync models grids of at most {MAX_CTAS} CTAs"));
        }
        let csize: u64 = l.cluster.iter().map(|&d| d as u64).product();
        if csize > 16 {
            return bad(Key::Launch("cluster"), format!("cluster has {csize} CTAs; sm_90 allows at most 16 (8 portable)"));
        }
        for d in 0..3 {
            if l.grid[d] % l.cluster[d] != 0 {
                return bad(
                    Key::Launch("grid"),
                    format!("grid dimension {} ({}) is not a multiple of the cluster dimension ({})", d, l.grid[d], l.cluster[d]),
                );
            }
        }
        // dynamic_smem is held to sm_90's limit with the static variables (crate::limits).
        let mut names = std::collections::HashSet::new();
        for (i, b) in self.buffers.iter().enumerate() {
            if !names.insert(b.name.as_str()) {
                return bad(Key::Buffer(i, "name"), format!("buffer `{}` declared twice", b.name));
            }
            if elem_bytes(&b.ty).is_none() {
                return bad(Key::Buffer(i, "type"), format!("buffer `{}`: unknown element type `{}`", b.name, b.ty));
            }
            if b.bytes == 0 || b.bytes > (1 << 30) {
                return bad(Key::Buffer(i, "bytes"), format!("buffer `{}`: bytes must be in 1..=2^30", b.name));
            }
            if let Some([lo, hi]) = b.range {
                if b.fill != Fill::Random || lo > hi {
                    return bad(Key::Buffer(i, "range"), format!("buffer `{}`: range = [lo, hi] (lo <= hi) goes with fill = \"random\"", b.name));
                }
            }
            if b.fill == Fill::Hex && hex_bytes(&b.hex).is_none() {
                return bad(Key::Buffer(i, "hex"), format!("buffer `{}`: hex is not an even-length hex string", b.name));
            }
            if let Some(h) = &b.expect_hex {
                if hex_bytes(h).is_none() {
                    return bad(Key::Buffer(i, "expect_hex"), format!("buffer `{}`: expect_hex is not an even-length hex string", b.name));
                }
            }
            if b.timing {
                if b.expect.is_some() || b.expect_hex.is_some() {
                    let k = if b.expect.is_some() { "expect" } else { "expect_hex" };
                    return bad(Key::Buffer(i, k), format!("buffer `{}` is a timing buffer: its samples differ from run to run and cannot be expected", b.name));
                }
                if !b.output || b.ty != "u64" {
                    return bad(Key::Buffer(i, "timing"), format!("buffer `{}`: a timing buffer must be an output of type \"u64\" (cycle samples)", b.name));
                }
                let n = b.bytes / 8;
                let groups = b.figures.len().max(1) as u64;
                if b.bytes % 8 != 0 || n % groups != 0 {
                    return bad(Key::Buffer(i, "figures"), format!("buffer `{}`: {} bytes do not split into {groups} equal groups of u64 samples", b.name, b.bytes));
                }
            } else if !b.figures.is_empty() {
                return bad(Key::Buffer(i, "figures"), format!("buffer `{}`: `figures` needs `timing = true`", b.name));
            }
            if (b.expect.is_some() || b.expect_hex.is_some()) && !b.output {
                let k = if b.expect.is_some() { "expect" } else { "expect_hex" };
                return bad(Key::Buffer(i, k), format!("buffer `{}` has expected contents but is not an output", b.name));
            }
        }
        for (i, p) in self.params.iter().enumerate() {
            if !p.fields.is_empty() {
                if p.buffer.is_some() || p.value.is_some() || p.tensormap.is_some() {
                    return bad(Key::Param(i, "name"), format!("param `{}`: a struct param is given by its fields alone (no buffer, value or tensormap beside them)", p.name));
                }
                for f in &p.fields {
                    self.validate_field(&p.name, f).or_else(|msg| bad(Key::Param(i, "field"), msg))?;
                }
                continue;
            }
            match (&p.buffer, &p.value, &p.tensormap) {
                (Some(b), None, None) => {
                    if !names.contains(b.as_str()) {
                        return bad(Key::Param(i, "buffer"), format!("param `{}` names unknown buffer `{b}`", p.name));
                    }
                }
                (None, Some(_), None) => {}
                (None, None, Some(t)) => {
                    if !self.tensormaps.iter().any(|m| &m.name == t) {
                        return bad(Key::Param(i, "tensormap"), format!("param `{}` names unknown tensormap `{t}`", p.name));
                    }
                }
                _ => return bad(Key::Param(i, "name"), format!("param `{}` needs exactly one of buffer, value, tensormap or [[param.field]] entries", p.name)),
            }
        }
        Ok(())
    }

    /// One `[[param.field]]` of struct param `param`: exactly one source, known names, a value
    /// that fits its type.
    fn validate_field(&self, param: &str, f: &ParamField) -> Result<(), String> {
        let at = format!("param `{param}`: field at offset {}", f.offset);
        match (&f.buffer, &f.value, &f.tensormap) {
            (Some(b), None, None) if self.buffers.iter().any(|x| &x.name == b) => Ok(()),
            (Some(b), None, None) => Err(format!("{at} names unknown buffer `{b}`")),
            (None, None, Some(t)) if self.tensormaps.iter().any(|m| &m.name == t) => Ok(()),
            (None, None, Some(t)) => Err(format!("{at} names unknown tensormap `{t}`")),
            (None, Some(v), None) if elem_bytes(&f.ty).is_none() => Err(format!("{at}: unknown type `{}` (value {v})", f.ty)),
            (None, Some(v), None) => encode_number(&f.ty, *v).map(|_| ()).ok_or_else(|| format!("{at}: value {v} does not fit type `{}`", f.ty)),
            _ => Err(format!("{at} needs exactly one of buffer, value (with type) or tensormap")),
        }
    }

    /// Threads per CTA.
    pub fn threads_per_cta(&self) -> u32 {
        self.launch.block.iter().product()
    }
    /// CTAs per cluster.
    pub fn cluster_size(&self) -> u32 {
        self.launch.cluster.iter().product()
    }
    /// CTAs in the grid.
    pub fn ctas(&self) -> u32 {
        self.launch.grid.iter().product()
    }
}

/// The `[[tensormap]]` field a violated encoder rule is about (where its diagnostic points).
fn rule_field(e: &TensorMapError) -> &'static str {
    let r = e.rule.as_str();
    let by_prefix: &[(&str, &str)] = &[
        ("unsupported: sub-byte", "data_type"),
        ("unsupported: swizzle", "swizzle"),
        ("tensorRank", "rank"),
        ("globalDim", "global_dim"),
        ("globalStrides", "global_strides"),
        ("elementStrides", "element_strides"),
        ("boxDim", "box_dim"),
        ("pixelBoxLowerCorner", "pixel_box_lower_corner"),
        ("pixelBoxUpperCorner", "pixel_box_upper_corner"),
        ("pixel bounding box", "pixel_box_upper_corner"),
        ("channelsPerPixel", "channels_per_pixel"),
        ("pixelsPerColumn", "pixels_per_column"),
        ("globalAddress", "buffer"),
        ("swizzle", "swizzle"),
        ("oobFill", "oob_fill"),
        ("tiled map must not set", "mode"),
        ("im2col map must not set", "box_dim"),
    ];
    by_prefix.iter().find(|(p, _)| r.starts_with(p)).map(|(_, f)| *f).unwrap_or("name")
}

/// Bytes of a manifest element type.
pub fn elem_bytes(ty: &str) -> Option<usize> {
    Some(match ty {
        "u8" | "s8" => 1,
        "u16" | "s16" | "f16" | "bf16" => 2,
        "u32" | "s32" | "f32" => 4,
        "u64" | "s64" | "f64" => 8,
        _ => return None,
    })
}

/// Encodes one element of a manifest type, little-endian.
pub fn encode_elem(ty: &str, v: f64) -> Vec<u8> {
    match ty {
        "f16" => half::f16::from_f64(v).to_le_bytes().to_vec(),
        "bf16" => half::bf16::from_f64(v).to_le_bytes().to_vec(),
        "f32" => (v as f32).to_le_bytes().to_vec(),
        "f64" => v.to_le_bytes().to_vec(),
        _ => {
            let n = elem_bytes(ty).unwrap_or(4);
            (v as i128 as u64).to_le_bytes()[..n].to_vec()
        }
    }
}

/// Decodes a hex string (whitespace and `_` ignored).
pub fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'_').collect();
    if clean.len() % 2 != 0 {
        return None;
    }
    clean
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

impl Manifest {
    /// Whether output buffer `name` holds timing samples (never compared exactly).
    pub fn is_timing(&self, name: &str) -> bool {
        self.buffers.iter().any(|b| b.name == name && b.timing)
    }
}

impl Buffer {
    /// The initial contents.
    pub fn initial_bytes(&self) -> Vec<u8> {
        let n = self.bytes as usize;
        let mut out = vec![0u8; n];
        let eb = elem_bytes(&self.ty).unwrap_or(4);
        match self.fill {
            Fill::Zeros => {}
            Fill::Iota => {
                for (i, chunk) in out.chunks_mut(eb).enumerate() {
                    let v = self.start.wrapping_add((i as i64).wrapping_mul(self.step));
                    let bytes = encode_elem(&self.ty, v as f64);
                    let k = chunk.len();
                    chunk.copy_from_slice(&bytes[..k]);
                }
            }
            Fill::Random => {
                let mut x = self.seed ^ 0x9E37_79B9_7F4A_7C15;
                let mut next = move || {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
                };
                match self.range {
                    None => out.iter_mut().for_each(|b| *b = (next() >> 56) as u8),
                    Some([lo, hi]) => {
                        let span = (hi - lo) as u64 + 1;
                        for chunk in out.chunks_mut(eb) {
                            let v = lo + ((next() >> 11) % span) as i64;
                            let k = chunk.len();
                            chunk.copy_from_slice(&encode_elem(&self.ty, v as f64)[..k]);
                        }
                    }
                }
            }
            Fill::Values => {
                for (i, v) in self.values.iter().enumerate() {
                    let bytes = encode_elem(&self.ty, *v);
                    let s = i * eb;
                    if s + eb <= n {
                        out[s..s + eb].copy_from_slice(&bytes);
                    }
                }
            }
            Fill::Hex => {
                let h = hex_bytes(&self.hex).unwrap_or_default();
                let k = h.len().min(n);
                out[..k].copy_from_slice(&h[..k]);
            }
        }
        out
    }

    /// The expected contents prefix, if any.
    pub fn expected_bytes(&self) -> Option<Vec<u8>> {
        if let Some(h) = &self.expect_hex {
            return hex_bytes(h);
        }
        self.expect
            .as_ref()
            .map(|vals| vals.iter().flat_map(|v| encode_elem(&self.ty, *v)).collect())
    }
}
