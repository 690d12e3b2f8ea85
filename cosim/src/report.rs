//! Running a program on the golden engine and reporting what happened (the JSON report of
//! `hopsync run --json`).

use crate::finding::Finding;
use crate::machine::{Config, Machine, Outcome};
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One output buffer compared with its expected contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputCheck {
    /// Buffer name.
    pub buffer: String,
    /// Whether the expected prefix matched.
    pub matches: bool,
    /// First differing byte offset.
    pub first_difference: Option<usize>,
    /// Expected bytes (hex) around the first difference.
    pub expected: String,
    /// Actual bytes (hex) around the first difference.
    pub actual: String,
}

/// The report of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Program path.
    pub program: String,
    /// Engine name.
    pub engine: String,
    /// "ok", "fault" or "error".
    pub status: String,
    /// Error text for status "error" (unsupported features).
    pub error: Option<String>,
    /// Warp-instructions executed.
    pub instructions: u64,
    /// Thread-instructions executed.
    pub thread_instructions: u64,
    /// Scheduler steps (golden) or cycles (RTL).
    pub steps: u64,
    /// SM clock cycles of the cycle-accurate (RTL) engine; absent for the golden engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// CTAs launched.
    pub ctas: u32,
    /// Warps launched.
    pub warps: u32,
    /// mbarrier phases completed.
    pub phases_completed: u64,
    /// Output buffers: name -> hex bytes.
    pub outputs: BTreeMap<String, String>,
    /// Output buffers with expectations, compared.
    pub checks: Vec<OutputCheck>,
    /// Findings (the first `machine::MAX_FINDINGS`).
    pub findings: Vec<Finding>,
    /// Findings past those, counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_dropped: u64,
    /// What the threads printed (`printf`, failed `assert` messages), in the order the engine
    /// ran them: each thread's lines are in its program order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub printf: Vec<crate::machine::DeviceOutput>,
    /// Earlier printf lines overwritten in the printf buffer (the latest
    /// `machine::PRINTF_BUFFER_BYTES` are kept, as CUDA's circular buffer keeps them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub printf_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Lower-case hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// FNV-1a 64 digest of bytes (for summaries).
pub fn digest(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| (h ^ *x as u64).wrapping_mul(0x100_0000_01b3))
}

impl RunReport {
    /// Builds the report of a finished machine.
    pub fn from_machine(m: &Machine<'_>, engine: &str, outcome: &Outcome) -> RunReport {
        let prog = m.prog;
        let mut outputs = BTreeMap::new();
        let mut checks = Vec::new();
        for b in prog.manifest.buffers.iter().filter(|b| b.output) {
            let Some(actual) = m.buffer(&b.name) else { continue };
            outputs.insert(b.name.clone(), hex(actual));
            if let Some(exp) = b.expected_bytes() {
                let n = exp.len().min(actual.len());
                let first = (0..exp.len()).find(|&k| k >= n || exp[k] != actual[k]);
                let (e, a) = match first {
                    Some(k) => {
                        let s = k.saturating_sub(4) & !3;
                        (hex(&exp[s..(s + 16).min(exp.len())]), hex(&actual[s..(s + 16).min(actual.len())]))
                    }
                    None => (String::new(), String::new()),
                };
                checks.push(OutputCheck { buffer: b.name.clone(), matches: first.is_none(), first_difference: first, expected: e, actual: a });
            }
        }
        let (status, error) = match outcome {
            Outcome::Completed if checks.iter().all(|c| c.matches) => ("ok", None),
            Outcome::Completed => ("fault", None),
            Outcome::Fault => ("fault", None),
            Outcome::Unsupported(s) => ("error", Some(s.clone())),
        };
        RunReport {
            program: prog.path.clone(),
            engine: engine.into(),
            status: status.into(),
            error,
            instructions: m.instructions,
            thread_instructions: m.thread_instructions,
            steps: m.step,
            cycles: None,
            ctas: m.ctas.len() as u32,
            warps: m.ctas.iter().map(|c| c.warps.len() as u32).sum(),
            phases_completed: m.phases_completed,
            outputs,
            checks,
            findings: m.findings.clone(),
            findings_dropped: m.findings_dropped,
            printf: m.output.iter().cloned().collect(),
            printf_dropped: m.output_dropped,
        }
    }

    /// The device's printed output, as a terminal shows a CUDA program's.
    pub fn device_output(&self) -> String {
        let mut s = String::new();
        if self.printf_dropped > 0 {
            s.push_str(&format!("[hopsync: {} earlier printf lines overwritten: CUDA's printf buffer keeps the last {} bytes]\n", self.printf_dropped, crate::machine::PRINTF_BUFFER_BYTES));
        }
        s.extend(self.printf.iter().map(|o| o.text.as_str()));
        s
    }

    /// A short human summary.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{}: {} on {} engine\n  {} CTAs, {} warps, {} warp-instructions ({} thread-instructions), {} {}, {} mbarrier phases completed\n",
            self.program,
            self.status,
            self.engine,
            self.ctas,
            self.warps,
            self.instructions,
            self.thread_instructions,
            self.cycles.unwrap_or(self.steps),
            if self.cycles.is_some() { "cycles" } else { "steps" },
            self.phases_completed
        );
        for (name, h) in &self.outputs {
            let bytes = h.len() / 2;
            let d = digest(&crate::report::unhex(h));
            let check = self.checks.iter().find(|c| &c.buffer == name);
            let verdict = match check {
                Some(c) if c.matches => " expected: match".to_string(),
                Some(c) => format!(
                    " expected: MISMATCH at byte {} (expected {} got {})",
                    c.first_difference.unwrap_or(0),
                    c.expected,
                    c.actual
                ),
                None => String::new(),
            };
            s.push_str(&format!("  output {name}: {bytes} bytes, fnv64 {d:016x}{verdict}\n"));
        }
        for f in &self.findings {
            s.push_str(&format!("  {f}\n"));
        }
        if self.findings_dropped > 0 {
            s.push_str(&format!("  ... and {} more findings, not kept (a run keeps its first {})\n", self.findings_dropped, self.findings.len()));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!("  error: {e}\n"));
        }
        s
    }
}

/// Decodes lower-case hex produced by [`hex`].
pub fn unhex(h: &str) -> Vec<u8> {
    (0..h.len() / 2).filter_map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok()).collect()
}

/// Runs a program on the golden engine.
pub fn run_golden(prog: &Program, cfg: Config) -> RunReport {
    let mut m = Machine::new(prog, cfg);
    let outcome = m.run();
    RunReport::from_machine(&m, "golden", &outcome)
}
