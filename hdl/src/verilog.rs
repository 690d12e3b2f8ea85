//! The Verilog flow: which units exist, their sizes, and their generated Verilog.
//!
//! `hopsync verilog [--out DIR]` writes one file per unit (`hopsync_<unit>.v`, top module
//! `hopsync_<unit>`: file and module names agree, as Verilator's DECLFILENAME wants), the Verilator lockstep crate (`verilator/`) builds its models from the same
//! text, and `hopsync synth` synthesizes it. rust-hdl emits monomorphic Verilog: the sizes are
//! parameters of the generator ([`Sizes`], the CLI's `--mbar-words-log2` etc.), written into each
//! file's header, not Verilog `parameter`s. Generation runs rust-hdl's checks
//! (`generate_verilog` panics when they fail; here that becomes an `Err`).

use crate::cluster_barrier_unit::ClusterBarrierUnit;
use crate::cta_top::CtaTop;
use crate::mbarrier_unit::MbarrierUnit;
use crate::named_barrier_unit::NamedBarrierUnit;
use crate::smem_port::SmemPort;
use crate::tma::TmaEngine;
use crate::cta_top::{CTA_TMA_BYTES_PER_CYCLE, CTA_TMA_MAX_OUTSTANDING, CTA_TMA_REQUEST_BYTES};
use rust_hdl::prelude::*;
use std::path::{Path, PathBuf};

/// A unit the flow knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnitInfo {
    /// the name used on the command line and in file names (`mbarrier_unit`)
    pub name: &'static str,
    /// the Rust type
    pub rust_type: &'static str,
    /// one line of what it is
    pub what: &'static str,
}

/// Every unit, the CTA top last.
pub const UNITS: &[UnitInfo] = &[
    UnitInfo {
        name: "mbarrier_unit",
        rust_type: "MbarrierUnit<A>",
        what: "mbarrier objects: 2^A-word bank, 3 request ports, 32-warp waiter table",
    },
    UnitInfo {
        name: "named_barrier_unit",
        rust_type: "NamedBarrierUnit",
        what: "16 named barriers of a CTA (bar / barrier)",
    },
    UnitInfo {
        name: "cluster_barrier_unit",
        rust_type: "ClusterBarrierUnit",
        what: "barrier.cluster over 16 CTAs x 32 warps",
    },
    UnitInfo {
        name: "tma_engine",
        rust_type: "TmaEngine",
        what: "TMA: bulk / tiled tensor copies, multicast, complete_tx, bulk groups (256 tags, 32 B/cycle)",
    },
    UnitInfo {
        name: "smem_port",
        rust_type: "SmemPort<S>",
        what: "shared-memory data port: 2^S 16-byte beats, byte enables, TMA / remote / warp ports",
    },
    UnitInfo {
        name: "cta_top",
        rust_type: "CtaTop<A, S>",
        what: "one CTA: mbarrier, named-barrier, cluster-barrier units, TMA engine, shared-memory port",
    },
];

/// Looks a unit up by name (`top` is an alias of `cta_top`; the `_unit` suffix may be left out).
pub fn unit(name: &str) -> Option<&'static UnitInfo> {
    let n = if name == "top" { "cta_top" } else { name };
    UNITS
        .iter()
        .find(|u| u.name == n || u.name.strip_suffix("_unit") == Some(n))
}

/// mbarrier bank sizes (log2 words) the generator is instantiated for.
pub const MBAR_WORDS_LOG2: &[usize] = &[6, 9, 12, 15];
/// shared-memory data bank sizes (log2 16-byte beats) the generator is instantiated for.
pub const SMEM_BEATS_LOG2: &[usize] = &[6, 8, 10, 12, 14];

/// The generator's size parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// log2 of the mbarrier bank's 64-bit words (`A`; one of [`MBAR_WORDS_LOG2`])
    pub mbar_words_log2: usize,
    /// log2 of the shared-memory data port's 16-byte beats (`S`; one of [`SMEM_BEATS_LOG2`])
    pub smem_beats_log2: usize,
    /// the try_wait system suspend-time limit, cycles
    pub suspend_cycles: u32,
}

impl Default for Sizes {
    /// 512 mbarrier words (4 KiB, the smallest bank the SM model uses), 256 data beats (4 KiB),
    /// a 1000-cycle try_wait limit.
    fn default() -> Self {
        Sizes {
            mbar_words_log2: 9,
            smem_beats_log2: 8,
            suspend_cycles: 1000,
        }
    }
}

impl Sizes {
    /// The sizes as `key=value` words (file headers, reports).
    pub fn describe(&self) -> String {
        format!(
            "A={} ({} mbarrier words), S={} ({} shared-memory beats = {} KiB), suspend_cycles={}",
            self.mbar_words_log2,
            1u64 << self.mbar_words_log2,
            self.smem_beats_log2,
            1u64 << self.smem_beats_log2,
            (16u64 << self.smem_beats_log2) / 1024,
            self.suspend_cycles
        )
    }

    /// Checks the sizes against the instantiated ones.
    pub fn check(&self) -> Result<(), String> {
        if !MBAR_WORDS_LOG2.contains(&self.mbar_words_log2) {
            return Err(format!(
                "mbarrier bank size 2^{} is not instantiated; choose one of 2^{:?}",
                self.mbar_words_log2, MBAR_WORDS_LOG2
            ));
        }
        if !SMEM_BEATS_LOG2.contains(&self.smem_beats_log2) {
            return Err(format!(
                "shared-memory size 2^{} is not instantiated; choose one of 2^{:?}",
                self.smem_beats_log2, SMEM_BEATS_LOG2
            ));
        }
        Ok(())
    }
}

/// The sizes the lockstep tests and their Verilator models use: a 64-word mbarrier bank, 64 data
/// words, a 48-cycle try_wait limit (small banks and a short limit: more collisions, more
/// timeouts per random cycle).
pub const TEST_A: usize = 6;
/// See [`TEST_A`] (64 beats: 1 KiB).
pub const TEST_S: usize = 6;
/// See [`TEST_A`].
pub const TEST_SUSPEND_CYCLES: u32 = 48;

impl Sizes {
    /// [`TEST_A`], [`TEST_S`], [`TEST_SUSPEND_CYCLES`].
    pub fn test() -> Sizes {
        Sizes {
            mbar_words_log2: TEST_A,
            smem_beats_log2: TEST_S,
            suspend_cycles: TEST_SUSPEND_CYCLES,
        }
    }
}

/// A port of a generated top module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// the port name (the rust-hdl field name)
    pub name: String,
    /// its width in bits
    pub width: usize,
    /// an input (else an output)
    pub input: bool,
}

/// The ports of the first module of rust-hdl output, in declaration order (its
/// `// Module arguments` section: `input wire  [W-1:0] name;` / `output reg  name;`).
pub fn ports(verilog: &str) -> Vec<Port> {
    let mut out = vec![];
    let mut in_args = false;
    for line in verilog.lines() {
        let t = line.trim();
        if t == "// Module arguments" {
            in_args = true;
            continue;
        }
        if !in_args {
            continue;
        }
        let input = t.starts_with("input ");
        if !input && !t.starts_with("output ") {
            if out.is_empty() {
                continue;
            }
            break;
        }
        let words: Vec<&str> = t.trim_end_matches(';').split_whitespace().collect();
        let name = words.last().unwrap().to_string();
        let width = words
            .iter()
            .find(|w| w.starts_with('['))
            .map(|w| {
                let hi: usize = w[1..w.find(':').unwrap()].parse().unwrap();
                hi + 1
            })
            .unwrap_or(1);
        out.push(Port { name, width, input });
    }
    out
}

/// The module name of a unit in generated Verilog.
pub fn module_name(unit: &str) -> String {
    format!("hopsync_{unit}")
}

/// rust-hdl's Verilog for `uut` (checked), with the top module renamed `top` -> `module`
/// (sub-modules `top$x` become `module$x`, so several units can be read together).
fn emit<U: Block>(mut uut: U, module: &str) -> Result<String, String> {
    uut.connect_all();
    check_all(&uut).map_err(|e| format!("rust-hdl checks failed: {e:?}"))?;
    let v = generate_verilog_unchecked(&uut);
    Ok(rename_top(&v, module))
}

/// Renames module `top` (and its `top$...` sub-modules) in rust-hdl output.
pub fn rename_top(v: &str, module: &str) -> String {
    let mut out = String::with_capacity(v.len() + 1024);
    for line in v.lines() {
        let l = if let Some(rest) = line.strip_prefix("module top") {
            format!("module {module}{rest}")
        } else if let Some(rest) = line.strip_prefix("endmodule // top") {
            format!("endmodule // {module}{rest}")
        } else {
            // instantiations: `top$sub name(` at the start of a (trimmed) line
            let t = line.trim_start();
            if t.starts_with("top$") {
                let indent = &line[..line.len() - t.len()];
                format!("{indent}{module}{}", &t[3..])
            } else {
                line.to_string()
            }
        };
        out.push_str(&l);
        out.push('\n');
    }
    out
}

macro_rules! with_a {
    ($a:expr, $A:ident => $body:expr) => {
        match $a {
            6 => { const $A: usize = 6; $body }
            9 => { const $A: usize = 9; $body }
            12 => { const $A: usize = 12; $body }
            15 => { const $A: usize = 15; $body }
            other => Err(format!("mbarrier bank size 2^{other} is not instantiated")),
        }
    };
}

macro_rules! with_s {
    ($s:expr, $S:ident => $body:expr) => {
        match $s {
            6 => { const $S: usize = 6; $body }
            8 => { const $S: usize = 8; $body }
            10 => { const $S: usize = 10; $body }
            12 => { const $S: usize = 12; $body }
            14 => { const $S: usize = 14; $body }
            other => Err(format!("shared-memory size 2^{other} is not instantiated")),
        }
    };
}

/// The body of a unit's Verilog (module `hopsync_<unit>` and its sub-modules), without header.
pub fn generate_body(unit_name: &str, sizes: &Sizes) -> Result<String, String> {
    sizes.check()?;
    let u = unit(unit_name).ok_or_else(|| {
        format!(
            "unknown unit `{unit_name}`; units: {}",
            UNITS.iter().map(|u| u.name).collect::<Vec<_>>().join(", ")
        )
    })?;
    let m = module_name(u.name);
    match u.name {
        "mbarrier_unit" => with_a!(sizes.mbar_words_log2, A =>
            emit(MbarrierUnit::<A>::new(sizes.suspend_cycles), &m)),
        "named_barrier_unit" => emit(NamedBarrierUnit::default(), &m),
        "cluster_barrier_unit" => emit(ClusterBarrierUnit::default(), &m),
        "tma_engine" => emit(
            TmaEngine::new(CTA_TMA_MAX_OUTSTANDING, CTA_TMA_BYTES_PER_CYCLE, CTA_TMA_REQUEST_BYTES),
            &m,
        ),
        "smem_port" => with_s!(sizes.smem_beats_log2, S => emit(SmemPort::<S>::default(), &m)),
        "cta_top" => with_a!(sizes.mbar_words_log2, A =>
            with_s!(sizes.smem_beats_log2, S =>
                emit(CtaTop::<A, S>::new(sizes.suspend_cycles), &m))),
        _ => unreachable!("every unit of UNITS is generated"),
    }
}

/// A unit's Verilog file: a header naming the generator and the sizes, then the body.
pub fn generate(unit_name: &str, sizes: &Sizes) -> Result<String, String> {
    let body = generate_body(unit_name, sizes)?;
    let u = unit(unit_name).unwrap();
    Ok(format!(
        "// Generated by hopsync-hdl (rust-hdl 0.46) from {} ({}). Do not edit; regenerate with\n\
         // `hopsync verilog`. Sizes: {}.\n{}",
        u.rust_type,
        u.what,
        sizes.describe(),
        body
    ))
}

/// Writes every unit's Verilog into `dir` (created); returns the files written.
pub fn write_all(dir: &Path, sizes: &Sizes) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut files = vec![];
    for u in UNITS {
        let v = generate(u.name, sizes)?;
        let p = dir.join(format!("{}.v", module_name(u.name)));
        std::fs::write(&p, v).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        files.push(p);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_generates_with_its_module_renamed() {
        let s = Sizes {
            mbar_words_log2: 6,
            smem_beats_log2: 6,
            suspend_cycles: 48,
        };
        for u in UNITS {
            let v = generate(u.name, &s).unwrap();
            let m = module_name(u.name);
            assert!(v.contains(&format!("module {m}(")), "{}", u.name);
            assert!(!v.contains("module top"), "{}", u.name);
            assert!(!v.contains(" top$"), "{}", u.name);
        }
        let p = ports(&generate("smem_port", &s).unwrap());
        assert_eq!(p[0], Port { name: "clock".into(), width: 1, input: true });
        assert_eq!(p[1].name, "tma_wr");
        assert!(p[1].input && p[1].width > 32);
        assert_eq!(p.last().unwrap().name, "local_resp");
        assert!(!p.last().unwrap().input);
        assert_eq!(unit("top").unwrap().name, "cta_top");
        assert_eq!(unit("mbarrier").unwrap().name, "mbarrier_unit");
        assert!(generate("nope", &s).is_err());
        assert!(generate(
            "mbarrier_unit",
            &Sizes {
                mbar_words_log2: 7,
                ..s
            }
        )
        .is_err());
    }
}
