//! The per-cycle observation for probes (waveforms): each warp's pc, activity and stall reason,
//! and each unit's signals.

use super::*;

impl<'p> Engine<'p> {
    pub(super) fn observe(&mut self) {
        let mut views = std::mem::take(&mut self.views);
        views.clear();
        // The run's last sample is the one the waveform holds to its end: it shows the warps
        // that exited as Exited, the last one's `ret` of this cycle included.
        let run_done = self.finished();
        for (ci, c) in self.ctas.iter().enumerate() {
            for (wi, w) in c.warps.iter().enumerate() {
                let mw = self.m.warp(ci as u32, wi as u32);
                let pc = mw.next_group().map(|g| g.0).unwrap_or_else(|| (0..WARP).filter(|&l| mw.lane()[l] != Lane::Done).map(|l| mw.pc()[l]).min().unwrap_or(0));
                let live = (0..WARP).filter(|&l| mw.lane()[l] != Lane::Done).fold(0u32, |m, l| m | 1 << l);
                let state = if self.cycle < self.launched_at {
                    WarpActivity::NotLaunched
                } else if w.exited() && w.op().is_none() {
                    WarpActivity::Exited
                } else if w.op().is_some() {
                    WarpActivity::InSync
                } else if mw.lane().contains(&Lane::Ready) {
                    WarpActivity::Runnable
                } else {
                    match mw.lane().iter().find_map(|l| if let Lane::Blocked(b) = l { Some(*b) } else { None }) {
                        Some(Wait::NamedBarrier(..) | Wait::NamedBarrierWarp(_)) => WarpActivity::NamedBarrier,
                        Some(Wait::ClusterBarrier(_)) => WarpActivity::ClusterBarrier,
                        Some(Wait::CpAsyncGroups(_) | Wait::BulkGroups(..) | Wait::WgmmaGroups(_)) => WarpActivity::AsyncGroups,
                        None => WarpActivity::Exited,
                    }
                };
                let stall = if run_done && w.exited() { Stall::Exited } else { w.stall };
                views.push(WarpView { cta: ci as u32, warp: wi as u32, pc, stall, state, live });
            }
        }
        let mut cluster_of = vec![0u32; self.ctas.len()];
        for k in 0..self.m.cluster_count() as u32 {
            for &c in self.m.cluster_ctas(k) {
                cluster_of[c as usize] = k as u32;
            }
        }
        let snap = Snapshot {
            cycle: self.cycle,
            warps: &views,
            module: self.m.module(),
            ctas: self
                .ctas
                .iter()
                .zip(&cluster_of)
                .map(|(c, &k)| CtaUnits { cluster: k, mbarrier: &c.mbar.unit, named: &c.named.unit, smem_booked_until: c.mem.smem.free, global_booked_until: c.mem.global.free, dsmem_booked_until: c.mem.dsmem.free })
                .collect(),
            clusters: self.clusters.iter().map(|c| &c.unit).collect(),
            period_ps: self.cfg.period_ps(),
        };
        if let Some(p) = self.probe.as_mut() {
            p.cycle(&snap);
        }
        self.views = views;
    }
}
