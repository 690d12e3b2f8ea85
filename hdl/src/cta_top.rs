//! CtaTop: the synchronization block of one CTA, the top the Verilog flow, the Verilator
//! lockstep tests and the FPGA table use: the MbarrierUnit (`2^A` words), the NamedBarrierUnit,
//! the ClusterBarrierUnit, the TmaEngine and the shared-memory data port (`2^S` 16-byte beats),
//! on one clock.
//!
//! The units keep their own ports, renamed with a prefix (`mbar_`, `bar_`, `cbar_`, `tma_`,
//! `smem_`), except where the top wires them together:
//! - the TMA engine's complete_tx requests for this CTA go to the mbarrier unit's TMA port;
//!   those for another CTA leave on `tma_remote_mbar_*` (to that CTA's `mbar_cluster_*`);
//! - its shared-memory writes (a 128-byte line of enabled 16-byte chunks) go one chunk a cycle
//!   ([`SmemLineSplit`]: the shared-memory port is 16 bytes wide) and carry a CTA mask: this
//!   CTA's part goes to the shared-memory port
//!   and, in the same cycle, the rest leaves on `dsmem_out_*` with the other CTAs' ranks (the
//!   cluster fabric delivers it to each one's `dsmem_in_*`); the write is taken when both sides
//!   take it; its reads (bulk stores) use the shared-memory port's read side, one 16-byte beat
//!   a cycle (the engine is built with `TmaEngine::beat_reads`: one chunk a read; the beat is
//!   handed over in every chunk of the line the engine reads);
//! - a reducing beat (`cp.reduce.async.bulk.shared::cluster`, `red_op` not `Copy`), from this
//!   CTA's TMA engine or on `dsmem_in` (`dsmem_in_red_op`), is consumed and dropped with `smem_red_dropped` set:
//!   the SmemPort has no reduction ALU, so the top refuses the beat rather than writing it as
//!   a copy (the SM engine applies these reductions at its shared memory; unsupported here);
//! - the CTA-level controls are shared: `exit` (a warp of this CTA exited) and `launch` (this
//!   CTA starts with a set of warps) go to the named-barrier unit and, tagged with this CTA's
//!   rank (`cta_rank`), to the cluster-barrier unit, whose `cbar_exit` / `cbar_launch` ports
//!   carry the same events of the other CTAs of the cluster (this CTA's own event wins a
//!   same-cycle tie: the cluster fabric retries the other one).
//!
//! One ClusterBarrierUnit serves a whole cluster: a cluster built from CtaTops uses the one of
//! rank 0 and leaves the others idle (the FPGA table counts it in every CTA top).

use crate::cluster_barrier_unit::{
    ClusterBarrierDone, ClusterBarrierFault, ClusterBarrierReq, ClusterBarrierResp,
    ClusterBarrierUnit, ClusterLaunch, ClusterWarpExit,
};
use crate::mbarrier_unit::{MbarrierFault, MbarrierReq, MbarrierResp, MbarrierUnit, MbarrierWake};
use crate::named_barrier_unit::{
    NamedBarrierFault, NamedBarrierLaunch, NamedBarrierRelease, NamedBarrierReq, NamedBarrierUnit,
    WarpExit,
};
use crate::smem_port::{SmemLineSplit, SmemPort, SmemReq, SmemResp, SmemWrite};
use crate::tma::{
    TmaCmd, TmaData128, TmaDescImage, TmaEngine, TmaFault, TmaGmemReq, TmaGmemResp, TmaRedOp,
    TmaSmemBeat,
};
use rust_hdl::prelude::*;

/// One CTA's synchronization block: `2^A` mbarrier words, `2^S` shared-memory data words.
#[derive(LogicBlock)]
pub struct CtaTop<const A: usize, const S: usize> {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// this CTA's rank in its cluster
    pub cta_rank: Signal<In, Bits<4>>,
    /// a warp of this CTA exited
    pub exit: Signal<In, WarpExit>,
    /// this CTA (re)starts
    pub launch: Signal<In, NamedBarrierLaunch>,

    /// mbarrier op of this CTA's warps
    pub mbar_local_req: Signal<In, MbarrierReq>,
    /// `mbar_local_req` is valid
    pub mbar_local_valid: Signal<In, bool>,
    /// `mbar_local_req` is accepted
    pub mbar_local_ready: Signal<Out, bool>,
    /// mbarrier op of another CTA of the cluster / an async store
    pub mbar_cluster_req: Signal<In, MbarrierReq>,
    /// `mbar_cluster_req` is valid
    pub mbar_cluster_valid: Signal<In, bool>,
    /// `mbar_cluster_req` is accepted
    pub mbar_cluster_ready: Signal<Out, bool>,
    /// mbarrier response
    pub mbar_resp: Signal<Out, MbarrierResp>,
    /// try_wait wake event
    pub mbar_wake: Signal<Out, MbarrierWake>,
    /// mbarrier finding
    pub mbar_fault: Signal<Out, MbarrierFault>,

    /// named-barrier instruction of a warp
    pub bar_req: Signal<In, NamedBarrierReq>,
    /// `bar_req` is valid
    pub bar_req_valid: Signal<In, bool>,
    /// `bar_req` is accepted
    pub bar_req_ready: Signal<Out, bool>,
    /// named-barrier completion
    pub bar_done: Signal<Out, NamedBarrierRelease>,
    /// named-barrier finding
    pub bar_fault: Signal<Out, NamedBarrierFault>,

    /// barrier.cluster instruction of a warp of the cluster
    pub cbar_req: Signal<In, ClusterBarrierReq>,
    /// `cbar_req` is valid
    pub cbar_req_valid: Signal<In, bool>,
    /// `cbar_req` is accepted
    pub cbar_req_ready: Signal<Out, bool>,
    /// a warp of another CTA of the cluster exited
    pub cbar_exit: Signal<In, ClusterWarpExit>,
    /// another CTA of the cluster (re)starts
    pub cbar_launch: Signal<In, ClusterLaunch>,
    /// answer to barrier.cluster.wait
    pub cbar_resp: Signal<Out, ClusterBarrierResp>,
    /// cluster phase completion
    pub cbar_done: Signal<Out, ClusterBarrierDone>,
    /// cluster-barrier finding
    pub cbar_fault: Signal<Out, ClusterBarrierFault>,

    /// TMA command
    pub tma_cmd: Signal<In, TmaCmd>,
    /// tensor-map image of a tensor command
    pub tma_cmd_desc: Signal<In, TmaDescImage>,
    /// `tma_cmd` is valid
    pub tma_cmd_valid: Signal<In, bool>,
    /// `tma_cmd` is accepted
    pub tma_cmd_ready: Signal<Out, bool>,
    /// TMA global-memory request
    pub tma_gmem_req: Signal<Out, TmaGmemReq>,
    /// `tma_gmem_req` is valid
    pub tma_gmem_req_valid: Signal<Out, bool>,
    /// `tma_gmem_req` is accepted
    pub tma_gmem_req_ready: Signal<In, bool>,
    /// TMA global-memory response
    pub tma_gmem_resp: Signal<In, TmaGmemResp>,
    /// `tma_gmem_resp` is valid
    pub tma_gmem_resp_valid: Signal<In, bool>,
    /// `tma_gmem_resp` is accepted
    pub tma_gmem_resp_ready: Signal<Out, bool>,
    /// `cp.async.bulk.wait_group{.read} N`: N
    pub tma_wait_n: Signal<In, Bits<8>>,
    /// the `.read` form
    pub tma_wait_read: Signal<In, bool>,
    /// the waiting thread (`warp * 32 + lane`)
    pub tma_wait_thread: Signal<In, Bits<10>>,
    /// the wait holds
    pub tma_wait_done: Signal<Out, bool>,
    /// committed bulk async-groups not complete
    pub tma_groups_pending: Signal<Out, Bits<4>>,
    /// TmaEngine `store_read_done`
    pub tma_store_read_done: Signal<Out, bool>,
    /// TmaEngine `store_writes_issued`
    pub tma_store_writes_issued: Signal<Out, bool>,
    /// a refused TMA command
    pub tma_fault: Signal<Out, TmaFault>,
    /// the TMA engine has nothing in flight
    pub tma_idle: Signal<Out, bool>,
    /// complete_tx of this CTA's TMA for another CTA's mbarrier
    pub tma_remote_mbar_req: Signal<Out, MbarrierReq>,
    /// the CTA it goes to
    pub tma_remote_mbar_cta: Signal<Out, Bits<4>>,
    /// `tma_remote_mbar_req` is valid
    pub tma_remote_mbar_valid: Signal<Out, bool>,
    /// `tma_remote_mbar_req` is accepted
    pub tma_remote_mbar_ready: Signal<In, bool>,
    /// a beat of this CTA's TMA for other CTAs' shared memories (`ctam`: every destination but
    /// this CTA; the cluster fabric delivers it to each, in parallel)
    pub dsmem_out: Signal<Out, TmaSmemBeat>,
    /// `dsmem_out` is valid
    pub dsmem_out_valid: Signal<Out, bool>,
    /// `dsmem_out` is accepted
    pub dsmem_out_ready: Signal<In, bool>,
    /// a beat of another CTA's TMA for this CTA's shared memory (its `dsmem_out` without the
    /// rank the cluster fabric routed it by)
    pub dsmem_in: Signal<In, SmemWrite>,
    /// the reduction of `dsmem_in` (its `dsmem_out`'s `red_op`)
    pub dsmem_in_red_op: Signal<In, TmaRedOp>,
    /// `dsmem_in` is valid
    pub dsmem_in_valid: Signal<In, bool>,
    /// `dsmem_in` is accepted
    pub dsmem_in_ready: Signal<Out, bool>,
    /// a reducing beat (this CTA's TMA or `dsmem_in`) was dropped this cycle: unsupported in
    /// the top (the SmemPort has no reduction ALU)
    pub smem_red_dropped: Signal<Out, bool>,

    /// a warp's shared-memory access
    pub smem_req: Signal<In, SmemReq>,
    /// `smem_req` is valid
    pub smem_valid: Signal<In, bool>,
    /// `smem_req` is accepted
    pub smem_ready: Signal<Out, bool>,
    /// shared-memory read response
    pub smem_resp: Signal<Out, SmemResp>,

    /// the mbarrier unit
    mbar: MbarrierUnit<A>,
    /// the named-barrier unit
    named: NamedBarrierUnit,
    /// the cluster-barrier unit
    cluster: ClusterBarrierUnit,
    /// the TMA engine
    tma: TmaEngine,
    /// the shared-memory data port
    smem: SmemPort<S>,
    /// the TMA engine's line writes, one chunk a cycle
    split: SmemLineSplit,
    /// this CTA's rank, one-hot
    wr_own: Signal<Local, Bits<16>>,
    /// the TMA engine's shared-memory write is for this CTA (among others)
    wr_local: Signal<Local, bool>,
    /// the TMA engine's shared-memory write is for another CTA (among others)
    wr_remote: Signal<Local, bool>,
    /// the local side takes the write (or it has none)
    wr_local_ok: Signal<Local, bool>,
    /// the DSMEM side takes the write (or it has none)
    wr_remote_ok: Signal<Local, bool>,
    /// the TMA engine's shared-memory write is a reduction
    wr_red: Signal<Local, bool>,
    /// `dsmem_in` is a reduction
    in_red: Signal<Local, bool>,
    /// the port's read beat as the engine's line read (the beat in every chunk)
    rd_line: Signal<Local, TmaData128>,
}

/// Global requests the top's TMA engine keeps in flight: all its reorder-buffer tags (sm90.toml
/// `[tma] read_tags`).
pub const CTA_TMA_MAX_OUTSTANDING: u32 = crate::tma::TMA_TAGS as u32;
/// The top's TMA request bandwidth, bytes per cycle (sm90.toml `[global] bytes_per_cycle`).
pub const CTA_TMA_BYTES_PER_CYCLE: u32 = 112;
/// The top's TMA read request size, bytes (sm90.toml `[tma] request_bytes`: one 128-byte line).
pub const CTA_TMA_REQUEST_BYTES: u32 = 128;

impl<const A: usize, const S: usize> CtaTop<A, S> {
    /// A top whose try_wait system time limit is `default_suspend_cycles` (TMA engine:
    /// [`CTA_TMA_MAX_OUTSTANDING`], [`CTA_TMA_BYTES_PER_CYCLE`], [`CTA_TMA_REQUEST_BYTES`]).
    pub fn new(default_suspend_cycles: u32) -> Self {
        Self {
            clock: Default::default(),
            cta_rank: Default::default(),
            exit: Default::default(),
            launch: Default::default(),
            mbar_local_req: Default::default(),
            mbar_local_valid: Default::default(),
            mbar_local_ready: Default::default(),
            mbar_cluster_req: Default::default(),
            mbar_cluster_valid: Default::default(),
            mbar_cluster_ready: Default::default(),
            mbar_resp: Default::default(),
            mbar_wake: Default::default(),
            mbar_fault: Default::default(),
            bar_req: Default::default(),
            bar_req_valid: Default::default(),
            bar_req_ready: Default::default(),
            bar_done: Default::default(),
            bar_fault: Default::default(),
            cbar_req: Default::default(),
            cbar_req_valid: Default::default(),
            cbar_req_ready: Default::default(),
            cbar_exit: Default::default(),
            cbar_launch: Default::default(),
            cbar_resp: Default::default(),
            cbar_done: Default::default(),
            cbar_fault: Default::default(),
            tma_cmd: Default::default(),
            tma_cmd_desc: Default::default(),
            tma_cmd_valid: Default::default(),
            tma_cmd_ready: Default::default(),
            tma_gmem_req: Default::default(),
            tma_gmem_req_valid: Default::default(),
            tma_gmem_req_ready: Default::default(),
            tma_gmem_resp: Default::default(),
            tma_gmem_resp_valid: Default::default(),
            tma_gmem_resp_ready: Default::default(),
            tma_wait_n: Default::default(),
            tma_wait_read: Default::default(),
            tma_wait_thread: Default::default(),
            tma_wait_done: Default::default(),
            tma_groups_pending: Default::default(),
            tma_store_read_done: Default::default(),
            tma_store_writes_issued: Default::default(),
            tma_fault: Default::default(),
            tma_idle: Default::default(),
            tma_remote_mbar_req: Default::default(),
            tma_remote_mbar_cta: Default::default(),
            tma_remote_mbar_valid: Default::default(),
            tma_remote_mbar_ready: Default::default(),
            dsmem_out: Default::default(),
            dsmem_out_valid: Default::default(),
            dsmem_out_ready: Default::default(),
            dsmem_in: Default::default(),
            dsmem_in_valid: Default::default(),
            dsmem_in_red_op: Default::default(),
            dsmem_in_ready: Default::default(),
            smem_red_dropped: Default::default(),
            smem_req: Default::default(),
            smem_valid: Default::default(),
            smem_ready: Default::default(),
            smem_resp: Default::default(),
            mbar: MbarrierUnit::new(default_suspend_cycles),
            named: Default::default(),
            cluster: Default::default(),
            tma: TmaEngine::new(CTA_TMA_MAX_OUTSTANDING, CTA_TMA_BYTES_PER_CYCLE, CTA_TMA_REQUEST_BYTES).beat_reads(),
            smem: Default::default(),
            split: Default::default(),
            wr_own: Default::default(),
            wr_local: Default::default(),
            wr_remote: Default::default(),
            wr_local_ok: Default::default(),
            wr_remote_ok: Default::default(),
            wr_red: Default::default(),
            in_red: Default::default(),
            rd_line: Default::default(),
        }
    }
}

impl<const A: usize, const S: usize> Logic for CtaTop<A, S> {
    #[hdl_gen]
    fn update(&mut self) {
        self.mbar.clock.next = self.clock.val();
        self.named.clock.next = self.clock.val();
        self.cluster.clock.next = self.clock.val();
        self.tma.clock.next = self.clock.val();
        self.smem.clock.next = self.clock.val();

        // ---- mbarrier unit
        self.mbar.local_req.next = self.mbar_local_req.val();
        self.mbar.local_valid.next = self.mbar_local_valid.val();
        self.mbar_local_ready.next = self.mbar.local_ready.val();
        self.mbar.cluster_req.next = self.mbar_cluster_req.val();
        self.mbar.cluster_valid.next = self.mbar_cluster_valid.val();
        self.mbar_cluster_ready.next = self.mbar.cluster_ready.val();
        self.mbar_resp.next = self.mbar.resp.val();
        self.mbar_wake.next = self.mbar.wake.val();
        self.mbar_fault.next = self.mbar.fault.val();

        // ---- named-barrier unit
        self.named.req.next = self.bar_req.val();
        self.named.req_valid.next = self.bar_req_valid.val();
        self.bar_req_ready.next = self.named.req_ready.val();
        self.named.exit.next = self.exit.val();
        self.named.launch.next = self.launch.val();
        self.bar_done.next = self.named.done.val();
        self.bar_fault.next = self.named.fault.val();

        // ---- cluster-barrier unit: this CTA's exit / launch win over the cluster's
        self.cluster.req.next = self.cbar_req.val();
        self.cluster.req_valid.next = self.cbar_req_valid.val();
        self.cbar_req_ready.next = self.cluster.req_ready.val();
        self.cluster.exit.next = self.cbar_exit.val();
        if self.exit.val().valid {
            self.cluster.exit.next.valid = true;
            self.cluster.exit.next.cta = self.cta_rank.val();
            self.cluster.exit.next.warp = self.exit.val().warp;
        }
        self.cluster.launch.next = self.cbar_launch.val();
        if self.launch.val().valid {
            self.cluster.launch.next.valid = true;
            self.cluster.launch.next.cta = self.cta_rank.val();
            self.cluster.launch.next.warps = self.launch.val().warps;
        }
        self.cbar_resp.next = self.cluster.resp.val();
        self.cbar_done.next = self.cluster.done.val();
        self.cbar_fault.next = self.cluster.fault.val();

        // ---- TMA engine: commands and global memory at the top's ports
        self.tma.cta_rank.next = self.cta_rank.val();
        self.tma.cmd.next = self.tma_cmd.val();
        self.tma.cmd_desc.next = self.tma_cmd_desc.val();
        self.tma.cmd_valid.next = self.tma_cmd_valid.val();
        self.tma_cmd_ready.next = self.tma.cmd_ready.val();
        self.tma_gmem_req.next = self.tma.gmem_req.val();
        self.tma_gmem_req_valid.next = self.tma.gmem_req_valid.val();
        self.tma.gmem_req_ready.next = self.tma_gmem_req_ready.val();
        self.tma.gmem_resp.next = self.tma_gmem_resp.val();
        self.tma.gmem_resp_valid.next = self.tma_gmem_resp_valid.val();
        self.tma_gmem_resp_ready.next = self.tma.gmem_resp_ready.val();
        self.tma.wait_n.next = self.tma_wait_n.val();
        self.tma.wait_read.next = self.tma_wait_read.val();
        self.tma.wait_thread.next = self.tma_wait_thread.val();
        self.tma_wait_done.next = self.tma.wait_done.val();
        self.tma_groups_pending.next = self.tma.groups_pending.val();
        self.tma_store_read_done.next = self.tma.store_read_done.val();
        self.tma_store_writes_issued.next = self.tma.store_writes_issued.val();
        self.tma_fault.next = self.tma.fault.val();
        self.tma_idle.next = self.tma.idle.val();

        // ---- TMA complete_tx: this CTA's mbarrier unit, or out to another CTA
        self.mbar.tma_req.next = self.tma.mbar_req.val();
        self.mbar.tma_valid.next = self.tma.mbar_valid.val() && !self.tma.mbar_remote.val();
        self.tma_remote_mbar_req.next = self.tma.mbar_req.val();
        self.tma_remote_mbar_cta.next = self.tma.mbar_cta.val();
        self.tma_remote_mbar_valid.next = self.tma.mbar_valid.val() && self.tma.mbar_remote.val();
        self.tma.mbar_ready.next = self.mbar.tma_ready.val();
        if self.tma.mbar_remote.val() {
            self.tma.mbar_ready.next = self.tma_remote_mbar_ready.val();
        }

        // ---- TMA shared-memory writes: this CTA's bank and, in the same cycle, out to the
        // other CTAs of the write's mask (multicast writes its destinations in parallel; the
        // write is accepted when both sides take it). A local reducing beat is consumed and
        // dropped: no ALU at the SmemPort.
        self.split.clock.next = self.clock.val();
        self.split.line.next = self.tma.smem_wr.val();
        self.split.line_valid.next = self.tma.smem_wr_valid.val();
        self.tma.smem_wr_ready.next = self.split.line_ready.val();
        self.wr_own.next = bits::<16>(1) << self.cta_rank.val();
        self.wr_local.next = (self.split.beat.val().ctam & self.wr_own.val()) != 0;
        self.wr_remote.next = (self.split.beat.val().ctam & !self.wr_own.val()) != 0;
        self.wr_red.next = self.split.beat.val().red_op != TmaRedOp::Copy;
        self.wr_local_ok.next = !self.wr_local.val() || self.wr_red.val() || self.smem.tma_wr_ready.val();
        self.wr_remote_ok.next = !self.wr_remote.val() || self.dsmem_out_ready.val();
        self.smem.tma_wr.next.addr = self.split.beat.val().addr;
        self.smem.tma_wr.next.data = self.split.beat.val().data;
        self.smem.tma_wr.next.mask = self.split.beat.val().mask;
        self.smem.tma_wr_valid.next =
            self.split.beat_valid.val() && self.wr_local.val() && !self.wr_red.val() && self.wr_remote_ok.val();
        self.dsmem_out.next = self.split.beat.val();
        self.dsmem_out.next.ctam = self.split.beat.val().ctam & !self.wr_own.val();
        self.dsmem_out_valid.next = self.split.beat_valid.val() && self.wr_remote.val() && self.wr_local_ok.val();
        self.split.beat_ready.next = self.wr_local_ok.val() && self.wr_remote_ok.val();
        // TMA shared-memory reads (bulk stores)
        self.smem.tma_rd_addr.next = self.tma.smem_rd_addr.val();
        self.smem.tma_rd_valid.next = self.tma.smem_rd_valid.val();
        self.tma.smem_rd_ready.next = self.smem.tma_rd_ready.val();
        self.rd_line.next.c0 = self.smem.tma_rd_data.val();
        self.rd_line.next.c1 = self.smem.tma_rd_data.val();
        self.rd_line.next.c2 = self.smem.tma_rd_data.val();
        self.rd_line.next.c3 = self.smem.tma_rd_data.val();
        self.rd_line.next.c4 = self.smem.tma_rd_data.val();
        self.rd_line.next.c5 = self.smem.tma_rd_data.val();
        self.rd_line.next.c6 = self.smem.tma_rd_data.val();
        self.rd_line.next.c7 = self.smem.tma_rd_data.val();
        self.tma.smem_rd_data.next = self.rd_line.val();

        // ---- shared-memory data port: other CTAs' TMA beats, the warps
        // (a reducing beat is consumed and dropped, as above)
        self.in_red.next = self.dsmem_in_red_op.val() != TmaRedOp::Copy;
        self.smem.remote_wr.next = self.dsmem_in.val();
        self.smem.remote_wr_valid.next = self.dsmem_in_valid.val() && !self.in_red.val();
        self.dsmem_in_ready.next = self.smem.remote_wr_ready.val() || self.in_red.val();
        self.smem_red_dropped.next = (self.split.beat_valid.val() && self.wr_local.val() && self.wr_red.val() && self.wr_remote_ok.val())
            || (self.dsmem_in_valid.val() && self.in_red.val());
        self.smem.local_req.next = self.smem_req.val();
        self.smem.local_valid.next = self.smem_valid.val();
        self.smem_ready.next = self.smem.local_ready.val();
        self.smem_resp.next = self.smem.local_resp.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::yosys_check_flat;

    #[test]
    fn cta_top_check_all_and_yosys() {
        let mut uut = CtaTop::<6, 6>::new(48);
        uut.connect_all();
        check_all(&uut).unwrap();
        let vlog = generate_verilog(&uut);
        yosys_validate("cta_top", &vlog).unwrap();
        yosys_check_flat("cta_top", &vlog);
    }

    /// A reducing beat on `dsmem_in` (the SmemPort has no ALU) is consumed and dropped with
    /// `smem_red_dropped`; a plain beat reaches the SmemPort. (This CTA's own reducing beats take
    /// the same path; the Verilator lockstep's command mix sends them.)
    #[test]
    fn reducing_beats_are_dropped_not_written() {
        let mut u = Box::new(CtaTop::<6, 6>::new(48));
        u.connect_all();
        assert!(simulate(&mut *u, 400));
        for red in [TmaRedOp::Add, TmaRedOp::Copy] {
            u.dsmem_in.next = SmemWrite { addr: 0x40.into(), mask: 0xFFFF.into(), ..Default::default() };
            u.dsmem_in_red_op.next = red;
            u.dsmem_in_valid.next = true;
            u.clock.next = false.into();
            assert!(simulate(&mut *u, 400));
            let dropped = red != TmaRedOp::Copy;
            assert_eq!(u.smem_red_dropped.val(), dropped, "{red:?}");
            assert_eq!(u.smem.remote_wr_valid.val(), !dropped, "{red:?}: the SmemPort's write");
            if dropped {
                assert!(u.dsmem_in_ready.val(), "a dropped beat is consumed");
            }
        }
    }
}
