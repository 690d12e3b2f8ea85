//! Timing of the warpgroup matrix multiply (PTX 9.7.15) on the RTL engine.
//!
//! The model: each SM sub-partition (warp scheduler; warp `w` is on `w mod schedulers`) has one
//! tensor core, which runs the `wgmma.mma_async`s issued to it in issue order. A wgmma of `N`
//! columns occupies it `N / 8 * cycles_per_n8` cycles (its family's constant in
//! `sim/configs/sm90.toml [wgmma]`: each warp's 16 x N x K slice at the SMSP's dense
//! multiply-add rate), at least `min_cycles` (a narrow wgmma does not stream faster than that),
//! and completes `pipeline_cycles` after its occupancy ends. The issuing warp
//! goes on issuing; `wgmma.commit_group` closes the warp's open group (its completion: that of
//! its last wgmma, or the commit's cycle when empty), and `wgmma.wait_group N` holds the warp
//! until every group but the N most recent has completed. The accumulator registers are not on
//! the scoreboard (timing.rs gives `wgmma.mma_async` no destinations): the wait orders them, and
//! chained wgmmas into the same accumulator stream through the tensor core back to back.
//!
//! The constants are set from `firmware/programs/calibration/wgmma.ptx` on silicon (sm90.toml
//! names the figures).
//!
//! The sparse `wgmma.mma_async.sp` (PTX 9.7.15.6) is timed as the dense wgmma of the same family
//! and the same M and N: its K is twice the dense one (m64nNk32 f16 against m64nNk16), so the
//! tensor core does a dense wgmma's occupancy and latency for twice the K, the 2x of Hopper's
//! structured sparsity. Not measured: no silicon figure of a sparse wgmma exists here yet.

use crate::config::{SmConfig, Wgmma};
use hopsync_firmware::ir::Instr;
use hopsync_firmware::mma::{wgmma_form, Family};
use hopsync_firmware::Opcode;
use std::collections::VecDeque;

/// One warp's groups: the completion cycle of its open group and of each committed group.
#[derive(Debug, Clone, Default)]
struct WarpGroups {
    open: Option<u64>,
    committed: VecDeque<u64>,
}

/// The tensor cores and wgmma groups of a run.
#[derive(Debug, Clone)]
pub struct WgmmaTiming {
    cfg: Wgmma,
    schedulers: usize,
    /// Per (cta, scheduler): the cycle the tensor core is free from.
    free: Vec<u64>,
    /// Per (cta, warp), indexed `cta * warps + warp` (grown on first use).
    warps: Vec<Vec<WarpGroups>>,
}

/// Cycles a wgmma of `n` columns of `family` occupies a tensor core.
pub fn occupancy(cfg: &Wgmma, family: Family, n: u32) -> u64 {
    let per = match family {
        Family::F16 | Family::Bf16 => cfg.f16_cycles_per_n8,
        Family::Tf32 => cfg.tf32_cycles_per_n8,
        Family::Fp8 => cfg.fp8_cycles_per_n8,
        Family::Int8 | Family::Int4 => cfg.int8_cycles_per_n8,
        Family::B1 => cfg.b1_cycles_per_n8,
        Family::F64 => cfg.f16_cycles_per_n8,
    };
    ((n as u64).div_ceil(8) * per).max(cfg.min_cycles)
}

/// Cycles from a wgmma's start on the tensor core to its completion.
pub fn latency(cfg: &Wgmma, family: Family, n: u32) -> u64 {
    occupancy(cfg, family, n) + cfg.pipeline_cycles
}

impl WgmmaTiming {
    /// An idle model.
    pub fn new(cfg: &SmConfig) -> WgmmaTiming {
        WgmmaTiming { cfg: cfg.wgmma.clone(), schedulers: cfg.issue.schedulers.max(1) as usize, free: Vec::new(), warps: Vec::new() }
    }

    fn warp(&mut self, c: u32, w: u32) -> &mut WarpGroups {
        let (c, w) = (c as usize, w as usize);
        if self.warps.len() <= c {
            self.warps.resize(c + 1, Vec::new());
        }
        let v = &mut self.warps[c];
        if v.len() <= w {
            v.resize(w + 1, WarpGroups::default());
        }
        &mut v[w]
    }

    /// Warp (c, w) issued `ins` at `now` with lanes `mask` executing; returns the cycle before
    /// which the warp may not issue again, if the instruction holds it (`wgmma.wait_group`).
    pub fn issued(&mut self, c: u32, w: u32, ins: &Instr, mask: u32, now: u64) -> Option<u64> {
        if mask == 0 {
            return None;
        }
        match ins.op {
            // The sparse form: the dense form's occupancy for the same family and N (module doc;
            // not measured).
            Opcode::WgmmaMmaAsync | Opcode::WgmmaMmaAsyncSp => {
                let f = wgmma_form(ins).ok()?;
                let k = c as usize * self.schedulers + w as usize % self.schedulers;
                if self.free.len() <= k {
                    self.free.resize(k + 1, 0);
                }
                let start = now.max(self.free[k]);
                self.free[k] = start + occupancy(&self.cfg, f.family, f.n);
                let done = start + latency(&self.cfg, f.family, f.n);
                let g = self.warp(c, w);
                g.open = Some(g.open.map_or(done, |o| o.max(done)));
                None
            }
            Opcode::WgmmaCommitGroup => {
                let g = self.warp(c, w);
                let done = g.open.take().unwrap_or(now);
                g.committed.push_back(done);
                None
            }
            Opcode::WgmmaWaitGroup => {
                let n = match ins.operands.first() {
                    Some(hopsync_firmware::ir::Operand::Imm(n)) => *n as usize,
                    _ => 0,
                };
                let g = self.warp(c, w);
                let mut until = now;
                while g.committed.len() > n {
                    until = until.max(g.committed.pop_front().unwrap_or(now));
                }
                (until > now).then_some(until)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopsync_firmware::parser::parse_module;

    fn body(lines: &str) -> Vec<Instr> {
        let d: Vec<String> = (0..32).map(|k| format!("%f{k}")).collect();
        let src = format!(
            ".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n.reg .f32 %f<32>;\n.reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;\n{}\nret;\n}}\n",
            lines.replace("D", &format!("{{{}}}", d.join(", ")))
        );
        parse_module(&src).unwrap().kernel.body
    }

    #[test]
    fn groups_complete_after_occupancy_and_pipeline() {
        let cfg = SmConfig::sm90();
        let b = body("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 D, %rd1, %rd2, %p1, 1, 1, 0, 0;\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;");
        let w = &cfg.wgmma;
        let occ = occupancy(w, Family::F16, 64);
        assert_eq!(occ, 8 * w.f16_cycles_per_n8);
        let mut t = WgmmaTiming::new(&cfg);
        assert_eq!(t.issued(0, 0, &b[0], u32::MAX, 100), None);
        // A second wgmma on the same SMSP starts when the first leaves the tensor core.
        assert_eq!(t.issued(0, 4, &b[0], u32::MAX, 101), None);
        assert_eq!(t.issued(0, 0, &b[1], u32::MAX, 102), None);
        assert_eq!(t.issued(0, 0, &b[2], u32::MAX, 103), Some(100 + occ + w.pipeline_cycles));
        assert_eq!(t.issued(0, 4, &b[1], u32::MAX, 104), None);
        assert_eq!(t.issued(0, 4, &b[2], u32::MAX, 105), Some(100 + 2 * occ + w.pipeline_cycles));
        // Another SMSP's tensor core is free.
        assert_eq!(t.issued(0, 1, &b[0], u32::MAX, 110), None);
        assert_eq!(t.issued(0, 1, &b[1], u32::MAX, 111), None);
        assert_eq!(t.issued(0, 1, &b[2], u32::MAX, 112), Some(110 + occ + w.pipeline_cycles));
        // Waiting on nothing (an empty group, or a group already done) does not hold the warp.
        assert_eq!(t.issued(0, 2, &b[1], u32::MAX, 200), None);
        assert_eq!(t.issued(0, 2, &b[2], u32::MAX, 201), None);
    }

    #[test]
    fn sparse_wgmma_is_timed_as_the_dense_one_of_its_n() {
        // wgmma.mma_async.sp m64n64k32 (f16, PTX 9.7.15.6): the dense m64n64k16's occupancy and
        // latency for twice the K (not measured on silicon).
        let cfg = SmConfig::sm90();
        let w = &cfg.wgmma;
        let sp = body("wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 D, %rd1, %rd2, %r1, 0, %p1, 1, 1, 0, 0;\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;");
        let mut t = WgmmaTiming::new(&cfg);
        assert_eq!(t.issued(0, 0, &sp[0], u32::MAX, 100), None);
        assert_eq!(t.issued(0, 4, &sp[0], u32::MAX, 101), None);
        assert_eq!(t.issued(0, 0, &sp[1], u32::MAX, 102), None);
        assert_eq!(t.issued(0, 0, &sp[2], u32::MAX, 103), Some(100 + occupancy(w, Family::F16, 64) + w.pipeline_cycles));
        assert_eq!(t.issued(0, 4, &sp[1], u32::MAX, 104), None);
        assert_eq!(t.issued(0, 4, &sp[2], u32::MAX, 105), Some(100 + 2 * occupancy(w, Family::F16, 64) + w.pipeline_cycles));
    }
}
