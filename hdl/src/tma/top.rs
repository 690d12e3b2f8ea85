//! TmaEngine: the top of the TMA engine: it only wires the stage blocks together (module doc of
//! [`crate::tma`]: the pipeline, the ports and the rules).

use super::ba_x::TmaSlotIter;
use super::ba_y::TmaRealign;
use super::cpl::TmaComplete;
use super::decoder::TmaDecoder;
use super::groups::TmaGroups;
use super::issuer::TmaIssuer;
use super::fifo::{TmaJobQueue, TmaRowQueue};
use super::obuf::TmaOutBuf;
use super::queue::TmaQueue;
use super::rg::TmaRowIter;
use super::rob::TmaRob;
use super::types::*;
use super::wbuf::TmaWriteBuf;
use crate::mbarrier_unit::MbarrierReq;
use rust_hdl::prelude::*;

/// The TMA engine. Constructor parameters: `max_outstanding` global requests in flight
/// (1..=256), the request bandwidth `bytes_per_cycle` (1..=128; a request costs 32 per sector)
/// and the read request size `request_bytes` (32, 64 or 128).
#[derive(LogicBlock)]
pub struct TmaEngine {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// this CTA's rank in its cluster (complete_tx to another rank is remote)
    pub cta_rank: Signal<In, Bits<4>>,
    /// a command
    pub cmd: Signal<In, TmaCmd>,
    /// the tensor-map image of a tensor command (valid with `cmd`)
    pub cmd_desc: Signal<In, TmaDescImage>,
    /// `cmd` is valid
    pub cmd_valid: Signal<In, bool>,
    /// `cmd` is accepted this cycle
    pub cmd_ready: Signal<Out, bool>,
    /// global-memory request
    pub gmem_req: Signal<Out, TmaGmemReq>,
    /// `gmem_req` is valid
    pub gmem_req_valid: Signal<Out, bool>,
    /// `gmem_req` is accepted this cycle
    pub gmem_req_ready: Signal<In, bool>,
    /// global-memory response
    pub gmem_resp: Signal<In, TmaGmemResp>,
    /// `gmem_resp` is valid
    pub gmem_resp_valid: Signal<In, bool>,
    /// `gmem_resp` is accepted (always)
    pub gmem_resp_ready: Signal<Out, bool>,
    /// shared-memory write
    pub smem_wr: Signal<Out, TmaSmemWrite>,
    /// `smem_wr` is valid
    pub smem_wr_valid: Signal<Out, bool>,
    /// `smem_wr` is accepted this cycle
    pub smem_wr_ready: Signal<In, bool>,
    /// shared-memory read address (stores; this CTA; swizzled, 16-byte aligned: the first
    /// wanted chunk)
    pub smem_rd_addr: Signal<Out, Bits<18>>,
    /// the chunks of `smem_rd_addr`'s 128-byte line the read wants (one, or a store pair's two;
    /// one only when built with [`TmaEngine::beat_reads`])
    pub smem_rd_cen: Signal<Out, Bits<8>>,
    /// `smem_rd_addr` is valid
    pub smem_rd_valid: Signal<Out, bool>,
    /// the read is accepted this cycle
    pub smem_rd_ready: Signal<In, bool>,
    /// read data of the read accepted at the previous edge: the line (its wanted chunks)
    pub smem_rd_data: Signal<In, TmaData128>,
    /// complete_tx request (op `CompleteTx`, word, tx_count)
    pub mbar_req: Signal<Out, MbarrierReq>,
    /// the CTA whose mbarrier unit gets `mbar_req`
    pub mbar_cta: Signal<Out, Bits<4>>,
    /// `mbar_cta` is not `cta_rank` (route to that CTA's cluster port)
    pub mbar_remote: Signal<Out, bool>,
    /// `mbar_req` is valid
    pub mbar_valid: Signal<Out, bool>,
    /// `mbar_req` is accepted this cycle
    pub mbar_ready: Signal<In, bool>,
    /// `cp.async.bulk.wait_group{.read} N`: N
    pub wait_n: Signal<In, Bits<8>>,
    /// the `.read` form
    pub wait_read: Signal<In, bool>,
    /// the waiting thread (CTA-local `warp * 32 + lane`)
    pub wait_thread: Signal<In, Bits<10>>,
    /// the wait holds (every committed group of `wait_thread` but the `wait_n` most recent is
    /// complete, or has completed its reads with `.read`; a thread with no context: true)
    pub wait_done: Signal<Out, bool>,
    /// committed bulk async-groups of `wait_thread` not yet complete
    pub groups_pending: Signal<Out, Bits<4>>,
    /// a store op's shared-memory reads are done (its last slot is in stage Y): store ops in
    /// command order (what `wait_group.read` waits for)
    pub store_read_done: Signal<Out, bool>,
    /// a store op's last sector write is issued this cycle, or its end marker left WB (an op
    /// with no in-bounds byte): store ops in command order, after their `store_read_done`
    pub store_writes_issued: Signal<Out, bool>,
    /// a refused command (registered)
    pub fault: Signal<Out, TmaFault>,
    /// nothing in flight
    pub idle: Signal<Out, bool>,

    /// acceptance and the command queue
    queue: TmaQueue,
    /// bulk async-groups
    groups: TmaGroups,
    /// the decoder and the job register J
    dec: TmaDecoder,
    /// the job queue (decoder -> BA)
    jobq: TmaJobQueue,
    /// the row iterator (RG)
    rg: TmaRowIter,
    /// the row queue (RG -> BA)
    rowq: TmaRowQueue,
    /// the global-memory request port
    issuer: TmaIssuer,
    /// the reorder buffer
    rob: TmaRob,
    /// BA stage X: the slot iterator
    ba_x: TmaSlotIter,
    /// BA stage Y: realigner, filler, sector packer
    ba_y: TmaRealign,
    /// the output buffer (loads, shared::cta -> shared::cluster beats)
    ob: TmaOutBuf,
    /// the complete_tx sequencer
    cpl: TmaComplete,
    /// the write buffer (stores)
    wb: TmaWriteBuf,
    /// stores read a pair of chunks (a sector) a cycle where they can: the port reads lines
    line_reads: Constant<bool>,
}

impl TmaEngine {
    /// An engine with at most `max_outstanding` (1..=256) global requests in flight, a request
    /// bandwidth of `bytes_per_cycle` (1..=128) bytes per cycle and reads of `request_bytes`
    /// (32, 64 or 128) aligned blocks.
    pub fn new(max_outstanding: u32, bytes_per_cycle: u32, request_bytes: u32) -> Self {
        assert!((1..=TMA_TAGS as u32).contains(&max_outstanding));
        assert!((1..=128).contains(&bytes_per_cycle));
        Self {
            clock: Default::default(),
            cta_rank: Default::default(),
            cmd: Default::default(),
            cmd_desc: Default::default(),
            cmd_valid: Default::default(),
            cmd_ready: Default::default(),
            gmem_req: Default::default(),
            gmem_req_valid: Default::default(),
            gmem_req_ready: Default::default(),
            gmem_resp: Default::default(),
            gmem_resp_valid: Default::default(),
            gmem_resp_ready: Default::default(),
            smem_wr: Default::default(),
            smem_wr_valid: Default::default(),
            smem_wr_ready: Default::default(),
            smem_rd_addr: Default::default(),
            smem_rd_cen: Default::default(),
            smem_rd_valid: Default::default(),
            smem_rd_ready: Default::default(),
            smem_rd_data: Default::default(),
            mbar_req: Default::default(),
            mbar_cta: Default::default(),
            mbar_remote: Default::default(),
            mbar_valid: Default::default(),
            mbar_ready: Default::default(),
            wait_n: Default::default(),
            wait_read: Default::default(),
            wait_thread: Default::default(),
            wait_done: Default::default(),
            groups_pending: Default::default(),
            store_read_done: Default::default(),
            store_writes_issued: Default::default(),
            fault: Default::default(),
            idle: Default::default(),
            queue: Default::default(),
            groups: Default::default(),
            dec: Default::default(),
            jobq: Default::default(),
            rg: Default::default(),
            rowq: Default::default(),
            issuer: TmaIssuer::new(max_outstanding, bytes_per_cycle, request_bytes),
            rob: Default::default(),
            ba_x: Default::default(),
            ba_y: Default::default(),
            ob: Default::default(),
            cpl: Default::default(),
            wb: Default::default(),
            line_reads: Constant::new(true),
        }
    }

    /// The engine for a shared-memory port that reads one 16-byte beat a cycle (the CTA top's
    /// `SmemPort`): a store reads one chunk a slot, never a pair (16 B/cycle).
    pub fn beat_reads(mut self) -> Self {
        self.line_reads = Constant::new(false);
        self
    }
}

impl Logic for TmaEngine {
    #[hdl_gen]
    fn update(&mut self) {
        self.queue.clock.next = self.clock.val();
        self.groups.clock.next = self.clock.val();
        self.dec.clock.next = self.clock.val();
        self.jobq.clock.next = self.clock.val();
        self.rg.clock.next = self.clock.val();
        self.rowq.clock.next = self.clock.val();
        self.issuer.clock.next = self.clock.val();
        self.rob.clock.next = self.clock.val();
        self.ba_x.clock.next = self.clock.val();
        self.ba_y.clock.next = self.clock.val();
        self.ob.clock.next = self.clock.val();
        self.cpl.clock.next = self.clock.val();
        self.wb.clock.next = self.clock.val();
        // acceptance, bulk-group contexts, the command queue
        self.queue.cmd.next = self.cmd.val();
        self.queue.cmd_desc.next = self.cmd_desc.val();
        self.queue.cmd_valid.next = self.cmd_valid.val();
        self.cmd_ready.next = self.queue.cmd_ready.val();
        self.queue.commit_ok.next = self.groups.commit_ok.val();
        self.queue.gid.next = self.groups.gid.val();
        self.queue.noctx.next = self.groups.noctx.val();
        self.queue.pop.next = self.dec.pop.val();
        self.groups.thread.next = self.cmd.val().thread;
        self.groups.is_commit.next = self.queue.is_commit.val();
        self.groups.is_store.next = self.queue.is_store.val();
        self.groups.acc.next = self.queue.acc.val();
        self.groups.rd_done.next = self.ba_y.rd_done.val();
        self.groups.rd_grp.next = self.ba_y.rd_grp.val();
        self.groups.wi_done.next = self.wb.done.val();
        self.groups.wr_issue.next = self.issuer.wr_issue.val();
        self.groups.wb_grp.next = self.wb.head.val().grp;
        self.groups.ack.next = self.gmem_resp_valid.val() && self.gmem_resp.val().write;
        self.groups.ack_tag.next = self.gmem_resp.val().tag;
        self.groups.drop.next = self.dec.drop.val();
        self.groups.drop_grp.next = self.dec.drop_grp.val();
        self.groups.wait_n.next = self.wait_n.val();
        self.groups.wait_read.next = self.wait_read.val();
        self.groups.wait_thread.next = self.wait_thread.val();
        self.wait_done.next = self.groups.wait_done.val();
        self.groups_pending.next = self.groups.groups_pending.val();
        // the decoder and J
        self.dec.head.next = self.queue.head.val();
        self.dec.head_desc.next = self.queue.head_desc.val();
        self.dec.head_gid.next = self.queue.head_gid.val();
        self.dec.head_noctx.next = self.queue.head_noctx.val();
        self.dec.head_valid.next = self.queue.head_valid.val();
        self.dec.y_store_last.next = self.ba_y.store_last.val();
        self.dec.wb_head_last.next = self.wb.head_last.val();
        self.dec.rg_done.next = self.rg.done.val();
        self.dec.jq_full.next = self.jobq.full.val();
        self.fault.next = self.dec.fault.val();
        // the row iterator, the row queue, the issuer and the reorder buffer
        self.rg.j.next = self.dec.rj.val();
        self.rg.start.next = self.dec.start.val();
        self.rg.j_free.next = self.dec.j_free.val();
        self.rg.rq_full.next = self.rowq.full.val();
        self.rg.nr_ready.next = self.issuer.nr_ready.val();
        self.rowq.push.next = self.rg.push.val();
        self.rowq.push_data.next = self.rg.rec.val();
        self.rowq.pop.next = self.ba_x.row_pop.val();
        self.issuer.nr_load.next = self.rg.nr_load.val();
        self.issuer.nr_in.next = self.rg.nr.val();
        self.issuer.wb_head.next = self.wb.head.val();
        self.issuer.wb_valid.next = self.wb.valid.val();
        self.issuer.tag.next = self.rob.tag.val();
        self.issuer.rob_full.next = self.rob.full.val();
        self.issuer.gmem_req_ready.next = self.gmem_req_ready.val();
        self.issuer.gmem_resp_valid.next = self.gmem_resp_valid.val();
        self.gmem_req.next = self.issuer.gmem_req.val();
        self.gmem_req_valid.next = self.issuer.gmem_req_valid.val();
        self.rob.alloc.next = self.issuer.rd_issue.val();
        self.rob.alloc_want.next = self.issuer.want.val();
        self.rob.gmem_resp.next = self.gmem_resp.val();
        self.rob.gmem_resp_valid.next = self.gmem_resp_valid.val();
        self.rob.pop.next = self.ba_x.rob_pop.val();
        self.rob.pop_n.next = self.ba_x.rob_pop_n.val();
        // every response has a reserved place
        self.gmem_resp_ready.next = true;
        // the job queue; BA stages X and Y
        self.jobq.push.next = self.dec.jq_push.val();
        self.jobq.push_data.next = self.dec.bj.val();
        self.jobq.pop.next = self.ba_x.j_pop.val();
        self.ba_x.j.next = self.jobq.head.val();
        self.ba_x.j_valid.next = self.jobq.nonempty.val();
        self.ba_x.rq_head.next = self.rowq.head.val();
        self.ba_x.rq_nonempty.next = self.rowq.nonempty.val();
        self.ba_x.rob_vld.next = self.rob.h_vld.val();
        self.ba_x.rob_n.next = self.rob.h_n.val();
        self.ba_x.smem_rd_ready.next = self.smem_rd_ready.val();
        self.ba_x.wb_n.next = self.wb.n.val();
        self.ba_x.ob_n.next = self.ob.n.val();
        self.smem_rd_addr.next = self.ba_x.smem_rd_addr.val();
        self.smem_rd_valid.next = self.ba_x.smem_rd_valid.val();
        self.smem_rd_cen.next = self.ba_x.smem_rd_cen.val();
        self.ba_x.pairs.next = self.line_reads.val();
        self.ba_y.y.next = self.ba_x.y_out.val();
        self.ba_y.smem_rd_data.next = self.smem_rd_data.val();
        self.ba_y.rob_rd.next = self.rob.rd.val();
        self.ba_y.rob_row.next = self.rob.rd_row.val();
        self.ba_y.rob_sel.next = self.rob.rd_sel.val();
        // OB, multicast, complete_tx; WB
        self.ob.push.next = self.ba_y.ob_push.val();
        self.ob.entry.next = self.ba_y.ob_entry.val();
        self.ob.smem_wr_ready.next = self.smem_wr_ready.val();
        self.ob.cpl_busy.next = self.cpl.busy.val();
        self.smem_wr.next = self.ob.smem_wr.val();
        self.smem_wr_valid.next = self.ob.smem_wr_valid.val();
        self.cpl.cta_rank.next = self.cta_rank.val();
        self.cpl.start.next = self.ob.job_done.val();
        self.cpl.ctam.next = self.ob.head_ctam.val();
        self.cpl.word.next = self.ob.head_word.val();
        self.cpl.tx.next = self.ob.head_tx.val();
        self.cpl.mbar_ready.next = self.mbar_ready.val();
        self.mbar_req.next = self.cpl.mbar_req.val();
        self.mbar_cta.next = self.cpl.mbar_cta.val();
        self.mbar_remote.next = self.cpl.mbar_remote.val();
        self.mbar_valid.next = self.cpl.mbar_valid.val();
        self.wb.push.next = self.ba_y.wb_push.val();
        self.wb.entry.next = self.ba_y.wb_entry.val();
        self.wb.entry_last.next = self.ba_y.wb_last.val();
        self.wb.wr_issue.next = self.issuer.wr_issue.val();
        // status
        self.store_read_done.next = self.ba_y.rd_done.val();
        self.store_writes_issued.next = self.wb.done.val();
        self.idle.next = self.queue.idle.val()
            && self.dec.idle.val()
            && self.jobq.idle.val()
            && !self.rg.busy.val()
            && self.issuer.idle.val()
            && self.rowq.idle.val()
            && self.ba_x.idle.val()
            && self.ob.idle.val()
            && self.wb.idle.val()
            && !self.cpl.busy.val()
            && self.rob.idle.val();
    }
}
