//! The TMA engine's testbench (tests only): the reference every test checks against (built
//! from `firmware/src/tensormap.rs`, the golden model's box walk and swizzle), an environment
//! that drives every port of the engine with random back-pressure and out-of-order memory, the
//! command builders and the random stimulus. The stage blocks' own tests and the engine-level
//! tests (tests.rs) share it.

use super::*;
use crate::mbarrier_unit::{MbarrierOp, MbarrierReq};
use rust_hdl::prelude::*;
use crate::common::{Trace, XorShift};
use hopsync_firmware::tensormap::{
    swizzle_offset, TensorMap, TensorMapDataType as Dt, TensorMapMode, TensorMapOobFill,
    TensorMapSpec, TensorMapSwizzle,
};
use std::collections::VecDeque;

/// Requests in flight in the tests (the ROB holds 256).
pub(crate) const MAX_OUT: u32 = TMA_TAGS as u32;
/// threads the testbench tracks bulk groups for
pub(crate) const TB_THREADS: usize = 1 << TMA_THREAD_BITS;
/// Global base of the test tensors (DESIGN.md: global buffers from 2^32).
pub(crate) const GBASE: u64 = 0x1_0000_0000;

/// Request bandwidth and read size of the tests' engine: sm90.toml's 128-byte line requests at
/// one line a cycle.
pub(crate) const BPC: u32 = 128;
/// See [`BPC`].
pub(crate) const REQ: u32 = 128;

pub(crate) fn new_uut(max_out: u32, bpc: u32, req: u32) -> Box<TmaEngine> {
    let mut u = Box::new(TmaEngine::new(max_out, bpc, req));
    u.connect_all();
    u
}

/// Global memory content: a hash of the address.
pub(crate) fn gbyte(a: u64) -> u8 {
    let x = (a ^ 0x3C3C).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 56) as u8) ^ (a as u8)
}

/// Shared-memory content of the storing CTA: a hash of the address.
pub(crate) fn sbyte(a: u32) -> u8 {
    let x = (a as u64 ^ 0x5A5A).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (x >> 48) as u8
}

// ------------------------------------------------------------------ commands

pub(crate) fn cmd(kind: TmaCmdKind) -> TmaCmd {
    TmaCmd {
        kind,
        ..Default::default()
    }
}

pub(crate) fn b(x: u64) -> Bits<32> {
    x.into()
}

pub(crate) fn bulk_load(src: u64, smem: u32, size: u32, mask: u16, mbar: u16) -> TmaCmd {
    TmaCmd {
        kind: TmaCmdKind::BulkLoad,
        smem: (smem as u64).into(),
        gaddr_lo: b(src & 0xFFFF_FFFF),
        gaddr_hi: b(src >> 32),
        size: (size as u64).into(),
        mbar: (mbar as u64).into(),
        cta_mask: (mask as u64).into(),
        ..Default::default()
    }
}

pub(crate) fn bulk_store(dst: u64, smem: u32, size: u32) -> TmaCmd {
    TmaCmd {
        kind: TmaCmdKind::BulkStore,
        smem: (smem as u64).into(),
        gaddr_lo: b(dst & 0xFFFF_FFFF),
        gaddr_hi: b(dst >> 32),
        size: (size as u64).into(),
        ..Default::default()
    }
}

pub(crate) fn tensor(kind: TmaCmdKind, rank: usize, coords: &[i64], smem: u32, mask: u16, mbar: u16) -> TmaCmd {
    let c = |i: usize| -> Bits<32> { ((coords.get(i).copied().unwrap_or(0) as i32 as u32) as u64).into() };
    TmaCmd {
        kind,
        dims: (rank as u64).into(),
        smem: (smem as u64).into(),
        mbar: (mbar as u64).into(),
        cta_mask: (mask as u64).into(),
        c0: c(0),
        c1: c(1),
        c2: c(2),
        c3: c(3),
        c4: c(4),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ reference

/// Every element of the box at `coords` (im2col offsets `offs`) in the box's dense order:
/// its byte offset in shared memory and its global address (None: out of bounds): the
/// walk of `firmware/src/tensormap.rs` ([PTX] 5.5.3 tiled, 5.5.4 im2col) that the golden
/// model uses.
pub(crate) fn box_elements(map: &TensorMap, coords: &[i64], offs: &[i64]) -> Vec<(u64, Option<u64>)> {
    map.box_elements(coords, offs)
}

/// Elements of one row: boxDim[0], or channelsPerPixel (an im2col row is a pixel).
pub(crate) fn row_elems(map: &TensorMap) -> usize {
    if map.mode() == TensorMapMode::Im2col {
        map.spec().channels_per_pixel as usize
    } else {
        map.spec().box_dim[0] as usize
    }
}

/// What one load must write: per destination CTA, the bytes of the shared-memory window
/// `[base, base + span)` (-1: not written).
#[derive(Clone, Debug)]
pub(crate) struct LoadExp {
    pub(crate) base: u32,
    pub(crate) span: usize,
    /// CTA rank -> slot in `bytes`
    pub(crate) slot: [i8; 16],
    pub(crate) bytes: Vec<i16>,
    pub(crate) remaining: usize,
    /// (cta, word, tx) in the order the engine sends them
    pub(crate) cpl: Vec<(u8, u16, u32)>,
    /// the reduction every write carries
    pub(crate) red: (TmaRedOp, TmaRedType),
}

impl LoadExp {
    pub(crate) fn new(base: u32, nbytes: u64, mask: u16, word: u16) -> LoadExp {
        let span = ((nbytes + 127) & !127) as usize;
        let mut slot = [-1i8; 16];
        let mut n = 0;
        let mut cpl = vec![];
        for c in 0..16 {
            if mask >> c & 1 == 1 {
                slot[c] = n;
                n += 1;
                cpl.push((c as u8, word, nbytes as u32));
            }
        }
        LoadExp {
            base,
            span,
            slot,
            bytes: vec![-1; span * n as usize],
            remaining: nbytes as usize * n as usize,
            cpl,
            red: (TmaRedOp::Copy, TmaRedType::B32),
        }
    }
    pub(crate) fn set(&mut self, addr: u64, v: u8) {
        let off = (addr - self.base as u64) as usize;
        assert!(off < self.span);
        for c in 0..16 {
            if self.slot[c] >= 0 {
                let i = self.slot[c] as usize * self.span + off;
                assert_eq!(self.bytes[i], -1, "reference writes byte {addr:#x} twice");
                self.bytes[i] = v as i16;
            }
        }
    }
}

/// Expected effects of one command, in command order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exp {
    pub(crate) load: Option<LoadExp>,
    pub(crate) reads: Vec<u64>,
    /// stores: (sector, mask, data)
    pub(crate) writes: Vec<(u64, u32, [u8; 32])>,
    /// stores: swizzled shared-memory addresses read
    pub(crate) smem_reads: Vec<u32>,
    pub(crate) fault: Option<TmaFaultKind>,
    pub(crate) commit: bool,
    pub(crate) store: bool,
}

/// Sectors covering the in-bounds bytes of each row, in order.
pub(crate) fn row_sectors(rows: &[(u64, u64)]) -> Vec<u64> {
    let mut v = vec![];
    for &(first, last) in rows {
        let mut s = first & !31;
        while s <= last {
            v.push(s);
            s += 32;
        }
    }
    v
}

/// The in-bounds byte range (first, last) of each row of `els` (rows of `n0` elements).
pub(crate) fn rows_of(els: &[(u64, Option<u64>)], n0: usize, es: u64) -> Vec<(u64, u64)> {
    els.chunks(n0)
        .filter_map(|row| {
            let ins: Vec<u64> = row.iter().filter_map(|e| e.1).collect();
            if ins.is_empty() {
                None
            } else {
                for w in ins.windows(2) {
                    assert_eq!(w[1], w[0] + es, "in-bounds elements of a row are contiguous");
                }
                Some((ins[0], ins[ins.len() - 1] + es - 1))
            }
        })
        .collect()
}

/// Global writes of a store of (global address, shared address) bytes, row by row: one
/// sector write per sector a row touches.
pub(crate) fn store_writes(rows: &[Vec<(u64, u32)>]) -> Vec<(u64, u32, [u8; 32])> {
    let mut out: Vec<(u64, u32, [u8; 32])> = vec![];
    for row in rows {
        let mut cur: Option<(u64, u32, [u8; 32])> = None;
        for &(g, sa) in row {
            let sec = g & !31;
            if cur.map(|c| c.0) != Some(sec) {
                if let Some(c) = cur.take() {
                    out.push(c);
                }
                cur = Some((sec, 0, [0; 32]));
            }
            let c = cur.as_mut().unwrap();
            let o = (g - sec) as usize;
            c.1 |= 1 << o;
            c.2[o] = sbyte(sa);
        }
        if let Some(c) = cur {
            out.push(c);
        }
    }
    out
}

pub(crate) fn exp_tensor_load(map: &TensorMap, coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) -> Exp {
    let es = map.element_size() as u64;
    let els = box_elements(map, coords, offs);
    let fill = map.oob_fill_element();
    let nbytes = map.smem_box_bytes();
    assert_eq!(nbytes, els.len() as u64 * es);
    let mut le = LoadExp::new(smem, nbytes, mask, word);
    for &(off, g) in &els {
        for bb in 0..es {
            let sa = swizzle_offset(map.spec().swizzle, smem as u64 + off + bb).unwrap();
            let v = match g {
                Some(a) => gbyte(a + bb),
                None => fill[bb as usize],
            };
            le.set(sa, v);
        }
    }
    let n0 = row_elems(map);
    Exp {
        load: Some(le),
        reads: row_sectors(&rows_of(&els, n0, es)),
        ..Default::default()
    }
}

pub(crate) fn exp_tensor_store(map: &TensorMap, coords: &[i64], offs: &[i64], smem: u32) -> Exp {
    let es = map.element_size() as u64;
    let els = box_elements(map, coords, offs);
    let n0 = row_elems(map);
    let sw = map.spec().swizzle;
    let rows: Vec<Vec<(u64, u32)>> = els
        .chunks(n0)
        .map(|row| {
            let mut v = vec![];
            for &(off, g) in row {
                if let Some(a) = g {
                    for bb in 0..es {
                        v.push((a + bb, swizzle_offset(sw, smem as u64 + off + bb).unwrap() as u32));
                    }
                }
            }
            v
        })
        .collect();
    // the engine reads every beat of each row with an in-bounds outer coordinate
    let mut smem_reads = vec![];
    let rowbytes = n0 as u64 * es;
    for (r, row) in els.chunks(n0).enumerate() {
        if map.mode() == TensorMapMode::Im2col {
            // every element of a pixel shares its outer coordinates
            assert_eq!(row.iter().any(|e| e.1.is_some()), !row.iter().all(|e| e.1.is_none()));
        }
        let outer = if map.mode() == TensorMapMode::Im2col {
            row.iter().any(|e| e.1.is_some())
        } else {
            row_outer_in_bounds(map, coords, r)
        };
        if outer {
            for j in 0..rowbytes / 16 {
                let dense = smem as u64 + r as u64 * rowbytes + 16 * j;
                smem_reads.push(swizzle_offset(sw, dense).unwrap() as u32);
            }
        }
    }
    Exp {
        writes: store_writes(&rows),
        smem_reads,
        store: true,
        ..Default::default()
    }
}

/// Whether row `r` of the box has every outer coordinate in bounds (its dimension-0
/// elements may all be out of bounds).
pub(crate) fn row_outer_in_bounds(map: &TensorMap, coords: &[i64], r: usize) -> bool {
    let s = map.spec();
    let rank = map.rank();
    let mut rem = r as u64;
    for i in 1..rank {
        let n = (s.box_dim[i] as u64).div_ceil(s.element_strides[i] as u64);
        let k = rem % n;
        rem /= n;
        let x = coords[i] + k as i64 * s.element_strides[i] as i64;
        if x < 0 || x >= s.global_dim[i] as i64 {
            return false;
        }
    }
    // a row whose dimension-0 window is empty is skipped whole by the engine
    let c0 = coords[0];
    let d0 = s.global_dim[0] as i64;
    let b0 = s.box_dim[0] as i64;
    c0 < d0 && c0 + b0 > 0
}

pub(crate) fn exp_bulk_load(src: u64, smem: u32, size: u32, mask: u16, word: u16) -> Exp {
    let mut le = LoadExp::new(smem, size as u64, mask, word);
    for i in 0..size as u64 {
        le.set(smem as u64 + i, gbyte(src + i));
    }
    let reads = if size == 0 { vec![] } else { row_sectors(&[(src, src + size as u64 - 1)]) };
    Exp {
        load: Some(le),
        reads,
        ..Default::default()
    }
}

pub(crate) fn exp_bulk_store(dst: u64, smem: u32, size: u32) -> Exp {
    let row: Vec<(u64, u32)> = (0..size).map(|i| (dst + i as u64, smem + i)).collect();
    Exp {
        writes: store_writes(&[row]),
        smem_reads: (0..size / 16).map(|j| smem + 16 * j).collect(),
        store: true,
        ..Default::default()
    }
}

// ------------------------------------------------------------------ testbench

/// Environment behaviour.
#[derive(Clone, Copy)]
pub(crate) struct Knobs {
    /// percent of cycles gmem_req_ready is high
    pub(crate) gmem_ready: u64,
    /// response latency range (cycles after acceptance)
    pub(crate) lat_min: u64,
    pub(crate) lat_max: u64,
    /// percent of cycles a due response is presented
    pub(crate) resp_pct: u64,
    /// percent ready of smem_wr / smem_rd / mbar
    pub(crate) smem_wr_ready: u64,
    pub(crate) smem_rd_ready: u64,
    pub(crate) mbar_ready: u64,
    /// percent of cycles a pending command is presented
    pub(crate) cmd_pct: u64,
}

pub(crate) const FAST: Knobs = Knobs {
    gmem_ready: 100,
    lat_min: 1,
    lat_max: 1,
    resp_pct: 100,
    smem_wr_ready: 100,
    smem_rd_ready: 100,
    mbar_ready: 100,
    cmd_pct: 100,
};

pub(crate) const RANDOM: Knobs = Knobs {
    gmem_ready: 80,
    lat_min: 1,
    lat_max: 24,
    resp_pct: 85,
    smem_wr_ready: 85,
    smem_rd_ready: 85,
    mbar_ready: 75,
    cmd_pct: 80,
};

/// One store op's bulk-group bookkeeping.
pub(crate) struct StoreOp {
    /// the issuing thread
    pub(crate) thread: usize,
    /// its group number in that thread
    pub(crate) group: u64,
    /// the write tag (the group's slot), once seen
    pub(crate) tag: Option<u64>,
    /// its writes' reduction (the command's)
    pub(crate) red: (TmaRedOp, TmaRedType),
    /// refused (never reads or writes)
    pub(crate) refused: bool,
    /// writes issued
    pub(crate) writes_seen: usize,
    pub(crate) reads_total: usize,
    pub(crate) reads_seen: usize,
    pub(crate) writes_total: usize,
    pub(crate) acks_seen: usize,
}

/// `simulate` that counts the update passes.
pub(crate) fn settle(u: &mut TmaEngine) -> u64 {
    for n in 1..=400 {
        u.update_all();
        if !u.has_changed() {
            return n;
        }
    }
    panic!("combinational logic did not settle");
}

#[derive(Default, Debug)]
pub(crate) struct Stats {
    pub(crate) passes: u64,
    pub(crate) cycles: u64,
    pub(crate) smem_writes: u64,
    /// line writes (each up to 8 chunks, for every CTA of its mask at once)
    pub(crate) line_writes: u64,
    pub(crate) smem_bytes: u64,
    pub(crate) first_wr: Option<u64>,
    pub(crate) last_wr: u64,
    /// sectors read
    pub(crate) reads: u64,
    /// read requests
    pub(crate) requests: u64,
    pub(crate) writes: u64,
    pub(crate) cpls: u64,
    pub(crate) faults: u64,
    pub(crate) copies: u64,
    pub(crate) remote_cpls: u64,
    /// most read tags in flight at once
    pub(crate) max_tags: u64,
}

pub(crate) struct Tb {
    pub(crate) uut: Box<TmaEngine>,
    /// the engine's `request_bytes`
    pub(crate) req: u32,
    pub(crate) trace: Option<Trace>,
    pub(crate) rng: XorShift,
    pub(crate) k: Knobs,
    pub(crate) cycle: u64,
    pub(crate) rank: u8,
    /// commands not yet accepted
    pub(crate) pending: VecDeque<(TmaCmd, TmaDescImage)>,
    /// memory: (due cycle, response, store-op index of a write)
    pub(crate) inflight: Vec<(u64, TmaGmemResp, Option<usize>)>,
    /// read tags in flight
    pub(crate) tags: [bool; TMA_TAGS],
    /// shared-memory read data for the next cycle
    pub(crate) rd_data: Option<TmaData128>,
    // expectations, in command order
    pub(crate) loads: VecDeque<LoadExp>,
    pub(crate) cpls: VecDeque<(u8, u16, u32)>,
    pub(crate) reads: VecDeque<u64>,
    pub(crate) writes: VecDeque<(u64, u32, [u8; 32], usize)>,
    pub(crate) smem_reads: VecDeque<(u32, Option<usize>)>,
    pub(crate) faults: VecDeque<TmaFaultKind>,
    pub(crate) ops: Vec<StoreOp>,
    /// commits generated / accepted
    pub(crate) commits_gen: [u64; TB_THREADS],
    pub(crate) commits_acc: [u64; TB_THREADS],
    /// the thread of the commands pushed next
    pub(crate) thread: usize,
    /// random wait_thread below this
    pub(crate) nthreads: u64,
    /// fixed wait_thread; random when None
    pub(crate) wait_thread: Option<u64>,
    /// ops accepted so far (index into `ops` of the next store to be accepted)
    pub(crate) ops_acc: usize,
    /// the next op to see `store_read_done` / `store_writes_issued`
    pub(crate) rd_next: usize,
    pub(crate) wi_next: usize,
    /// for each pending command: Some(op index) for a store
    pub(crate) pending_ops: VecDeque<Option<usize>>,
    pub(crate) st: Stats,
    pub(crate) idle_streak: u64,
    /// fixed (wait_n, wait_read) inputs; random when None
    pub(crate) wait: Option<(u64, bool)>,
    /// every shared-memory write (cta, address, data), when set
    pub(crate) wr_log: Option<Vec<(u8, u64, [u8; 16])>>,
    /// wait_done / groups_pending of the last cycle
    pub(crate) last_wait_done: bool,
    pub(crate) last_groups_pending: u64,
}

impl Tb {
    pub(crate) fn new(k: Knobs, seed: u64) -> Tb {
        Tb::build(k, seed, new_uut(MAX_OUT, BPC, REQ), REQ, None)
    }

    pub(crate) fn with_params(k: Knobs, seed: u64, max_out: u32, bpc: u32, req: u32) -> Tb {
        Tb::build(k, seed, new_uut(max_out, bpc, req), req, None)
    }

    pub(crate) fn build(k: Knobs, seed: u64, mut uut: Box<TmaEngine>, req: u32, trace: Option<Trace>) -> Tb {
        assert!(simulate(&mut *uut, 200));
        let mut tb = Tb {
            uut,
            req,
            trace,
            rng: XorShift(seed),
            k,
            cycle: 0,
            rank: 2,
            pending: VecDeque::new(),
            inflight: vec![],
            tags: [false; TMA_TAGS],
            rd_data: None,
            loads: VecDeque::new(),
            cpls: VecDeque::new(),
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            smem_reads: VecDeque::new(),
            faults: VecDeque::new(),
            ops: vec![],
            commits_gen: [0; TB_THREADS],
            commits_acc: [0; TB_THREADS],
            thread: 0,
            nthreads: 1,
            wait_thread: None,
            ops_acc: 0,
            rd_next: 0,
            wi_next: 0,
            pending_ops: VecDeque::new(),
            st: Stats::default(),
            idle_streak: 0,
            wait: None,
            wr_log: None,
            last_wait_done: false,
            last_groups_pending: 0,
        };
        for _ in 0..2 {
            tb.step();
        }
        tb
    }

    pub(crate) fn traced(k: Knobs, seed: u64) -> Tb {
        let inputs = vec![
            ("cta_rank", 4),
            ("cmd", TmaCmd::BITS),
            ("cmd_desc", TmaDescImage::BITS),
            ("cmd_valid", 1),
            ("gmem_req_ready", 1),
            ("gmem_resp", TmaGmemResp::BITS),
            ("gmem_resp_valid", 1),
            ("smem_wr_ready", 1),
            ("smem_rd_ready", 1),
            ("smem_rd_data", TmaData128::BITS),
            ("mbar_ready", 1),
            ("wait_n", 8),
            ("wait_read", 1),
            ("wait_thread", 10),
        ];
        let pre = vec![
            ("cmd_ready", 1),
            ("gmem_req", TmaGmemReq::BITS),
            ("gmem_req_valid", 1),
            ("gmem_resp_ready", 1),
            ("smem_wr", TmaSmemWrite::BITS),
            ("smem_wr_valid", 1),
            ("smem_rd_addr", 18),
            ("smem_rd_cen", 8),
            ("smem_rd_valid", 1),
            ("mbar_req", MbarrierReq::BITS),
            ("mbar_cta", 4),
            ("mbar_remote", 1),
            ("mbar_valid", 1),
            ("wait_done", 1),
            ("store_read_done", 1),
            ("store_writes_issued", 1),
        ];
        let post = vec![("fault", TmaFault::BITS), ("idle", 1), ("groups_pending", 4)];
        Tb::build(
            k,
            seed,
            new_uut(MAX_OUT, BPC, REQ),
            REQ,
            Some(Trace {
                inputs,
                pre,
                post,
                rows: vec![],
                warmup: 2,
            }),
        )
    }

    /// Queues a command with its expected effects.
    pub(crate) fn push(&mut self, mut c: TmaCmd, d: TmaDescImage, e: Exp) {
        c.thread = (self.thread as u64).into();
        if let Some(f) = e.fault {
            self.faults.push_back(f);
        }
        let mut op = None;
        if e.store || (e.fault.is_some() && matches!(c.kind, TmaCmdKind::BulkStore | TmaCmdKind::TensorStore)) {
            let idx = self.ops.len();
            self.ops.push(StoreOp {
                thread: self.thread,
                group: self.commits_gen[self.thread],
                tag: None,
                red: (c.red_op, c.red_type),
                refused: e.fault.is_some(),
                writes_seen: 0,
                reads_total: e.smem_reads.len(),
                reads_seen: 0,
                writes_total: e.writes.len(),
                acks_seen: 0,
            });
            op = Some(idx);
            for w in &e.writes {
                self.writes.push_back((w.0, w.1, w.2, idx));
            }
            for &a in &e.smem_reads {
                self.smem_reads.push_back((a, Some(idx)));
            }
        } else {
            // an S2S copy's source reads belong to no bulk group
            for &a in &e.smem_reads {
                self.smem_reads.push_back((a, None));
            }
        }
        if e.commit {
            self.commits_gen[self.thread] += 1;
        }
        if let Some(l) = e.load {
            self.loads.push_back(l);
        }
        self.reads.extend(e.reads);
        self.pending.push_back((c, d));
        self.pending_ops.push_back(op);
    }

    pub(crate) fn push_commit(&mut self) {
        self.push(
            cmd(TmaCmdKind::CommitGroup),
            TmaDescImage::default(),
            Exp {
                commit: true,
                ..Default::default()
            },
        );
    }

    pub(crate) fn expectations_met(&self) -> bool {
        self.pending.is_empty()
            && self.loads.is_empty()
            && self.cpls.is_empty()
            && self.reads.is_empty()
            && self.writes.is_empty()
            && self.smem_reads.is_empty()
            && self.faults.is_empty()
            && self.inflight.is_empty()
    }

    /// Runs until every expectation is met and the engine is idle.
    pub(crate) fn drain(&mut self) {
        let mut n = 0;
        while !(self.expectations_met() && self.uut.idle.val()) {
            self.step();
            n += 1;
            assert!(n < 200_000, "no completion after {n} cycles");
        }
        // every accepted store op signalled its reads and writes
        let live = self.ops.iter().filter(|o| !o.refused).count();
        let seen = |k: usize| self.ops[..k].iter().filter(|o| !o.refused).count();
        assert_eq!((seen(self.rd_next), seen(self.wi_next)), (live, live), "store events");
        // idle: every group complete
        assert_eq!(self.uut.groups_pending.val().to_u64(), 0);
    }

    /// One clock cycle with the environment's responses; checks every output.
    pub(crate) fn step(&mut self) {
        let k = self.k;
        let c = self.cycle;
        // ---- inputs
        let present_cmd = !self.pending.is_empty() && self.rng.pct(k.cmd_pct);
        let (cm, cd) = if present_cmd { self.pending[0] } else { (TmaCmd::default(), TmaDescImage::default()) };
        let gready = self.rng.pct(k.gmem_ready);
        let due: Vec<usize> = (0..self.inflight.len()).filter(|&i| self.inflight[i].0 <= c).collect();
        let resp = if !due.is_empty() && self.rng.pct(k.resp_pct) {
            Some(due[self.rng.below(due.len() as u64) as usize])
        } else {
            None
        };
        let rsp = resp.map(|i| self.inflight[i].1).unwrap_or_default();
        let wr_ready = self.rng.pct(k.smem_wr_ready);
        let rd_ready = self.rng.pct(k.smem_rd_ready);
        let rd_data = self.rd_data.take().unwrap_or_default();
        let mready = self.rng.pct(k.mbar_ready);
        let (wait_n, wait_read) = match self.wait {
            Some(w) => w,
            None => (self.rng.below(9), self.rng.pct(50)),
        };
        let wait_thread = match self.wait_thread {
            Some(t) => t,
            None => self.rng.below(self.nthreads),
        };
        let u = &mut *self.uut;
        u.cta_rank.next = (self.rank as u64).into();
        u.cmd.next = cm;
        u.cmd_desc.next = cd;
        u.cmd_valid.next = present_cmd;
        u.gmem_req_ready.next = gready;
        u.gmem_resp.next = rsp;
        u.gmem_resp_valid.next = resp.is_some();
        u.smem_wr_ready.next = wr_ready;
        u.smem_rd_ready.next = rd_ready;
        u.smem_rd_data.next = rd_data;
        u.mbar_ready.next = mready;
        u.wait_n.next = wait_n.into();
        u.wait_read.next = wait_read;
        u.wait_thread.next = wait_thread.into();
        u.clock.next = false.into();
        self.st.passes += settle(u);
        let cmd_ready = u.cmd_ready.val();
        let greq = u.gmem_req.val();
        let greq_v = u.gmem_req_valid.val();
        let resp_ready = u.gmem_resp_ready.val();
        let swr = u.smem_wr.val();
        let swr_v = u.smem_wr_valid.val();
        let srd_a = u.smem_rd_addr.val();
        let srd_v = u.smem_rd_valid.val();
        let srd_cen = u.smem_rd_cen.val();
        let mreq = u.mbar_req.val();
        let mcta = u.mbar_cta.val();
        let mremote = u.mbar_remote.val();
        let mvalid = u.mbar_valid.val();
        let wdone = u.wait_done.val();
        let gpend = u.groups_pending.val();
        let st_rd = u.store_read_done.val();
        let st_wi = u.store_writes_issued.val();
        let fault = u.fault.val();
        let idle = u.idle.val();
        u.clock.next = true.into();
        self.st.passes += settle(u);
        if let Some(t) = &mut self.trace {
            let h = |x: bool| Trace::hex(x);
            t.rows.push((
                vec![
                    Trace::hex(Bits::<4>::from(self.rank as u64)),
                    Trace::hex(cm),
                    Trace::hex(cd),
                    h(present_cmd),
                    h(gready),
                    Trace::hex(rsp),
                    h(resp.is_some()),
                    h(wr_ready),
                    h(rd_ready),
                    Trace::hex(rd_data),
                    h(mready),
                    Trace::hex(Bits::<8>::from(wait_n)),
                    h(wait_read),
                    Trace::hex(Bits::<10>::from(wait_thread)),
                ],
                [
                    h(cmd_ready),
                    Trace::hex(greq),
                    h(greq_v),
                    h(resp_ready),
                    Trace::hex(swr),
                    h(swr_v),
                    Trace::hex(srd_a),
                    Trace::hex(srd_cen),
                    h(srd_v),
                    Trace::hex(mreq),
                    Trace::hex(mcta),
                    h(mremote),
                    h(mvalid),
                    h(wdone),
                    h(st_rd),
                    h(st_wi),
                    Trace::hex(u.fault.val()),
                    h(u.idle.val()),
                    Trace::hex(u.groups_pending.val()),
                ]
                .join(" "),
            ));
        }
        // ---- checks of this cycle's outputs (sampled before the edge)
        assert!(resp_ready, "gmem_resp_ready is always high");
        // bulk groups: a wait that holds must not see an unfinished older op
        let committed = self.commits_acc[wait_thread as usize];
        if wdone && committed > wait_n {
            for (i, op) in self.ops[..self.ops_acc].iter().enumerate() {
                if op.thread == wait_thread as usize && op.group < committed - wait_n {
                    if wait_read {
                        assert_eq!(op.reads_seen, op.reads_total, "cycle {c}: wait_group.read {wait_n} holds before op {i}'s reads");
                    } else {
                        assert_eq!(op.acks_seen, op.writes_total, "cycle {c}: wait_group {wait_n} holds before op {i}'s writes completed");
                    }
                }
            }
        }
        if present_cmd && cmd_ready {
            let (cmd_acc, _) = self.pending.pop_front().unwrap();
            let op = self.pending_ops.pop_front().unwrap();
            if cmd_acc.kind == TmaCmdKind::CommitGroup {
                self.commits_acc[cmd_acc.thread.index()] += 1;
            }
            if let Some(i) = op {
                assert_eq!(i, self.ops_acc);
                self.ops_acc += 1;
            }
        }
        if let Some(i) = resp {
            let (_, r, op) = self.inflight.swap_remove(i);
            if r.write {
                self.ops[op.unwrap()].acks_seen += 1;
            } else {
                self.tags[r.tag.index()] = false;
            }
        }
        if greq_v && gready {
            let addr = greq.addr_lo.to_u64() | greq.addr_hi.to_u64() << 32;
            let lat = k.lat_min + self.rng.below(k.lat_max - k.lat_min + 1);
            if greq.write {
                self.st.writes += 1;
                let (ea, em, ed, op) = self.writes.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected write {addr:#x}"));
                let mask = greq.mask_lo.to_u64() as u32 | (greq.mask_hi.to_u64() as u32) << 16;
                let mut data = [0u8; 32];
                data[..16].copy_from_slice(&greq.data_lo.to_bytes());
                data[16..].copy_from_slice(&greq.data_hi.to_bytes());
                assert_eq!((addr, mask), (ea, em), "cycle {c}: write sector / mask");
                for i in 0..32 {
                    if em >> i & 1 == 1 {
                        assert_eq!(data[i], ed[i], "cycle {c}: write byte {i} of sector {addr:#x}");
                    }
                }
                // the tag is the op's group slot: one per (thread, group), not shared with
                // another group that is not complete
                let tag = greq.tag.to_u64();
                assert!(tag < TMA_SLOTS as u64, "cycle {c}: write tag {tag} is no group slot");
                let (th, g) = (self.ops[op].thread, self.ops[op].group);
                assert_eq!(*self.ops[op].tag.get_or_insert(tag), tag, "cycle {c}: op {op}'s writes change slot");
                self.ops[op].writes_seen += 1;
                assert_eq!((greq.red_op, greq.red_type), self.ops[op].red, "cycle {c}: op {op}'s writes carry its reduction");
                for (j, o) in self.ops.iter().enumerate() {
                    if o.tag == Some(tag) && (o.thread, o.group) != (th, g) {
                        assert_eq!(o.acks_seen, o.writes_total, "cycle {c}: op {op} (thread {th} group {g}) shares slot {tag} with incomplete op {j} (thread {} group {})", o.thread, o.group);
                    }
                }
                self.inflight.push((
                    c + lat,
                    TmaGmemResp {
                        tag: greq.tag,
                        write: true,
                        ..Default::default()
                    },
                    Some(op),
                ));
            } else {
                // a read: the next sectors of the reference's list, a contiguous run within one
                // request block of the line
                self.st.requests += 1;
                let sect = greq.sect.to_u64();
                assert!(addr % 128 == 0 && sect != 0, "cycle {c}: read of line {addr:#x}, sectors {sect:#b}");
                let (lo, n) = (sect.trailing_zeros() as u64, sect.count_ones() as u64);
                assert_eq!(sect >> lo, (1 << n) - 1, "cycle {c}: sectors {sect:#b} of line {addr:#x} are not contiguous");
                let blk = self.req as u64 / 32;
                assert!(lo / blk == (lo + n - 1) / blk, "cycle {c}: sectors {sect:#b} of line {addr:#x} cross a {}-byte block", self.req);
                for k in lo..lo + n {
                    self.st.reads += 1;
                    let ea = self.reads.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected read {:#x}", addr + 32 * k));
                    assert_eq!(addr + 32 * k, ea, "cycle {c}: read sector");
                }
                let t = greq.tag.index();
                assert!(!self.tags[t], "cycle {c}: tag {t} reused while in flight");
                self.tags[t] = true;
                let n = self.tags.iter().filter(|x| **x).count() as u64;
                self.st.max_tags = self.st.max_tags.max(n);
                // sectors not asked for come back as garbage the engine must not use
                let bytes: Vec<u8> = (0..128u64).map(|i| if sect >> (i / 32) & 1 == 1 { gbyte(addr + i) } else { 0xEE }).collect();
                self.inflight.push((
                    c + lat,
                    TmaGmemResp {
                        tag: greq.tag,
                        write: false,
                        data: TmaData128::from_bytes(&bytes),
                    },
                    None,
                ));
            }
        }
        if srd_v && rd_ready {
            // a line read: the chunk of `a`, and a store pair's second chunk (the other enabled
            // one), each the next expected slot read; the chunks not enabled read as garbage
            let a = srd_a.to_u64() as u32;
            let cen = srd_cen.to_u64() as u32;
            let line = a & !127;
            assert!(cen >> (a >> 4 & 7) & 1 == 1 && cen.count_ones() <= 2, "cycle {c}: smem read {a:#x} chunk enables {cen:#010b}");
            let second = (0..8).find(|&k| cen >> k & 1 == 1 && k != (a >> 4 & 7)).map(|k| line + 16 * k);
            for a in std::iter::once(a).chain(second) {
                let (ea, op) = self.smem_reads.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected smem read {a:#x}"));
                assert_eq!(a, ea, "cycle {c}: smem read address");
                if let Some(op) = op {
                    self.ops[op].reads_seen += 1;
                }
            }
            let bytes: Vec<u8> = (0..128).map(|i| if cen >> (i / 16) & 1 == 1 { sbyte(line + i) } else { 0xEE }).collect();
            self.rd_data = Some(TmaData128::from_bytes(&bytes));
        }
        // per-op store events, in command order (refused ops have none)
        if st_rd {
            while self.ops.get(self.rd_next).is_some_and(|o| o.refused) {
                self.rd_next += 1;
            }
            let i = self.rd_next;
            assert!(i < self.ops_acc, "cycle {c}: store_read_done with no store op");
            assert_eq!(self.ops[i].reads_seen, self.ops[i].reads_total, "cycle {c}: store_read_done of op {i} before its reads");
            self.rd_next += 1;
        }
        if st_wi {
            while self.ops.get(self.wi_next).is_some_and(|o| o.refused) {
                self.wi_next += 1;
            }
            let i = self.wi_next;
            assert!(i < self.rd_next, "cycle {c}: store_writes_issued of op {i} before its store_read_done");
            assert_eq!(self.ops[i].writes_seen, self.ops[i].writes_total, "cycle {c}: store_writes_issued of op {i} before its writes");
            self.wi_next += 1;
        }
        // loads retire in order; a copy without bytes retires at once
        while self.loads.front().map(|l| l.remaining == 0).unwrap_or(false) {
            let l = self.loads.pop_front().unwrap();
            self.cpls.extend(l.cpl);
            self.st.copies += 1;
        }
        if swr_v && wr_ready {
            let ctam = swr.ctam.to_u64();
            assert_ne!(ctam, 0, "cycle {c}: a write with no destination");
            assert_ne!(swr.cen.to_u64(), 0, "cycle {c}: a write with no chunk");
            assert_eq!(swr.addr.to_u64() % 128, 0, "cycle {c}: a line write");
            if let Some(l) = self.loads.front() {
                assert_eq!((swr.red_op, swr.red_type), l.red, "cycle {c}: the write's reduction");
                assert_eq!(ctam, l.slot.iter().enumerate().filter(|s| *s.1 >= 0).fold(0u64, |m, s| m | 1 << s.0), "cycle {c}: the write's CTA mask is the load's");
            }
            self.st.first_wr.get_or_insert(c);
            self.st.last_wr = c;
            self.st.line_writes += 1;
            // every CTA of the mask gets each chunk of the line in this cycle
            for (a, data) in swr.chunks() {
                for cta in (0..16).filter(|k| ctam >> k & 1 == 1) {
                    self.st.smem_writes += 1;
                    self.st.smem_bytes += 16;
                    if let Some(log) = &mut self.wr_log {
                        log.push((cta as u8, a, data));
                    }
                    let l = self.loads.front_mut().unwrap_or_else(|| panic!("cycle {c}: unexpected smem write {a:#x}"));
                    assert!(l.slot[cta] >= 0, "cycle {c}: write to cta {cta} outside the mask");
                    assert!(a >= l.base as u64 && a + 16 <= l.base as u64 + l.span as u64, "cycle {c}: smem write {a:#x} outside the box at {:#x}", l.base);
                    for i in 0..16 {
                        let idx = l.slot[cta] as usize * l.span + (a - l.base as u64) as usize + i;
                        assert!(l.bytes[idx] >= 0, "cycle {c}: byte {:#x} of cta {cta} not expected (or written twice)", a + i as u64);
                        assert_eq!(data[i] as i16, l.bytes[idx], "cycle {c}: byte {:#x} of cta {cta}", a + i as u64);
                        l.bytes[idx] = -2;
                    }
                    l.remaining -= 16;
                }
            }
            while self.loads.front().map(|l| l.remaining == 0).unwrap_or(false) {
                let l = self.loads.pop_front().unwrap();
                self.cpls.extend(l.cpl);
                self.st.copies += 1;
            }
        }
        if mvalid && mready {
            self.st.cpls += 1;
            let (ec, ew, et) = self.cpls.pop_front().unwrap_or_else(|| panic!("cycle {c}: complete_tx before the copy's data (cta {})", mcta.index()));
            assert_eq!(mreq.op, MbarrierOp::CompleteTx);
            assert_eq!(
                (mcta.index() as u8, mreq.word.to_u64() as u16, mreq.tx_count.to_u64() as u32),
                (ec, ew, et),
                "cycle {c}: complete_tx (cta, word, bytes)"
            );
            assert_eq!(mremote, ec != self.rank, "cycle {c}: mbar_remote");
            if mremote {
                self.st.remote_cpls += 1;
            }
        }
        if fault.valid {
            self.st.faults += 1;
            let e = self.faults.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected fault {:?}", fault.kind));
            assert_eq!(fault.kind, e, "cycle {c}: fault kind");
        }
        self.last_wait_done = wdone;
        self.last_groups_pending = gpend.to_u64();
        if idle {
            assert!(wdone, "cycle {c}: idle but wait_group {wait_n} does not hold");
            assert_eq!(gpend.to_u64(), 0, "cycle {c}: idle with groups pending");
        }
        self.idle_streak = if idle && !self.pending.is_empty() { self.idle_streak + 1 } else { 0 };
        assert!(self.idle_streak < 5000, "cycle {c}: commands pending but the engine stays idle");
        self.cycle += 1;
        self.st.cycles += 1;
    }
}

// ------------------------------------------------------------------ map helpers

pub(crate) fn map(spec: TensorMapSpec) -> (TensorMap, TmaDescImage) {
    let m = TensorMap::new(spec).unwrap_or_else(|e| panic!("{e}"));
    let d = TmaDescImage::from_bytes(&m.encode());
    (m, d)
}

pub(crate) fn load_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], smem: u32, mask: u16, word: u16) {
    load_o(tb, m, coords, &[], smem, mask, word);
}

pub(crate) fn store_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], smem: u32) {
    store_o(tb, m, coords, &[], smem);
}

/// A tensor command for `m` (the load mode of its map; im2col offsets `offs`).
pub(crate) fn tensor_m(kind: TmaCmdKind, m: &TensorMap, coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) -> TmaCmd {
    let mut c = tensor(kind, m.rank(), coords, smem, mask, word);
    c.im2col = m.mode() == TensorMapMode::Im2col;
    let o = |i: usize| -> Bits<16> { (offs.get(i).copied().unwrap_or(0) as u64).into() };
    c.o0 = o(0);
    c.o1 = o(1);
    c.o2 = o(2);
    c
}

pub(crate) fn load_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) {
    let e = exp_tensor_load(&m.0, coords, offs, smem, mask, word);
    tb.push(tensor_m(TmaCmdKind::TensorLoad, &m.0, coords, offs, smem, mask, word), m.1, e);
}

pub(crate) fn store_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64], smem: u32) {
    let e = exp_tensor_store(&m.0, coords, offs, smem);
    tb.push(tensor_m(TmaCmdKind::TensorStore, &m.0, coords, offs, smem, 0, 0), m.1, e);
}

pub(crate) fn load_b(tb: &mut Tb, src: u64, smem: u32, size: u32, mask: u16, word: u16) {
    let e = exp_bulk_load(src, smem, size, mask, word);
    tb.push(bulk_load(src, smem, size, mask, word), TmaDescImage::default(), e);
}

pub(crate) fn store_b(tb: &mut Tb, dst: u64, smem: u32, size: u32) {
    let e = exp_bulk_store(dst, smem, size);
    tb.push(bulk_store(dst, smem, size), TmaDescImage::default(), e);
}

pub(crate) fn s2s_cmd(src: u32, dst: u32, size: u32, cta: u8, word: u16, red: (TmaRedOp, TmaRedType)) -> TmaCmd {
    TmaCmd {
        kind: TmaCmdKind::BulkS2S,
        smem: (src as u64).into(),
        dsmem: (dst as u64).into(),
        size: (size as u64).into(),
        mbar: (word as u64).into(),
        cta_mask: (1u64 << cta).into(),
        red_op: red.0,
        red_type: red.1,
        ..Default::default()
    }
}

/// shared::cta -> shared::cluster (PTX 9.7.9.25.4.1 / .4.2): the source beats read in
/// order, each written (carrying the reduction) at the same offset from `dst` in CTA
/// `cta`, then one complete_tx of `size` bytes there.
pub(crate) fn s2s_b(tb: &mut Tb, src: u32, dst: u32, size: u32, cta: u8, word: u16, red: (TmaRedOp, TmaRedType)) {
    let mut le = LoadExp::new(dst, size as u64, 1 << cta, word);
    le.red = red;
    for i in 0..size {
        le.set((dst + i) as u64, sbyte(src + i));
    }
    let e = Exp {
        load: Some(le),
        smem_reads: (0..size / 16).map(|j| src + 16 * j).collect(),
        ..Default::default()
    };
    tb.push(s2s_cmd(src, dst, size, cta, word, red), TmaDescImage::default(), e);
}

/// A bulk prefetch (PTX 9.7.9.25.4.3): the sector reads of a load of the range, nothing
/// written, no complete_tx.
pub(crate) fn prefetch_b(tb: &mut Tb, src: u64, size: u32) {
    let mut c = bulk_load(src, 0, size, 0, 0);
    c.kind = TmaCmdKind::BulkPrefetch;
    let reads = if size == 0 { vec![] } else { row_sectors(&[(src, src + size as u64 - 1)]) };
    tb.push(c, TmaDescImage::default(), Exp { reads, ..Default::default() });
}

/// A tensor prefetch (PTX 9.7.9.25.5.4): the sector reads of the tiled load of the box.
pub(crate) fn prefetch_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64]) {
    prefetch_o(tb, m, coords, &[]);
}

pub(crate) fn prefetch_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64]) {
    let mut e = exp_tensor_load(&m.0, coords, offs, 0, 1, 0);
    e.load = None;
    tb.push(tensor_m(TmaCmdKind::TensorPrefetch, &m.0, coords, offs, 0, 0, 0), m.1, e);
}

/// Queues a command the engine must refuse with `f`.
pub(crate) fn refused(tb: &mut Tb, c: TmaCmd, d: TmaDescImage, f: TmaFaultKind) {
    tb.push(
        c,
        d,
        Exp {
            fault: Some(f),
            ..Default::default()
        },
    );
}

// ------------------------------------------------------------------ random stimulus

pub(crate) const DTYPES: [Dt; 8] = [Dt::Uint8, Dt::Uint16, Dt::Float16, Dt::Bfloat16, Dt::Float32, Dt::Int32, Dt::Float64, Dt::Uint64];

/// A random valid tiled map: rank 1..=5, every element size, swizzles, element strides,
/// small boxes (at most 2 KiB) over small tensors so that coordinates reach every edge.
pub(crate) fn random_map(rng: &mut XorShift) -> (TensorMap, TmaDescImage) {
    loop {
        let dt = DTYPES[rng.below(8) as usize];
        let es = dt.element_size().unwrap() as u64;
        let rank = [1, 2, 2, 2, 3, 3, 4, 5][rng.below(8) as usize];
        let sw = [TensorMapSwizzle::None, TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128][rng.below(5) as usize];
        let max_row = sw.span_bytes().map(|s| s as u64).unwrap_or(256).min(256 * es).min(256);
        let rowbytes = 16 * (1 + rng.below(max_row / 16));
        let mut box_dim = vec![(rowbytes / es) as u32];
        let mut estr = vec![1 + rng.below(8) as u32];
        let mut rows = 1u64;
        for _ in 1..rank {
            let er = if rng.pct(80) { 3 } else { 8 };
            let e = if rng.pct(60) { 1 } else { 1 + rng.below(er) as u32 };
            let br = if rng.pct(80) { 6 } else { 12 };
            let mut bd = 1 + rng.below(br) as u32;
            while rows * (bd as u64).div_ceil(e as u64) * rowbytes > 2048 && bd > 1 {
                bd -= 1;
            }
            rows *= (bd as u64).div_ceil(e as u64);
            box_dim.push(bd);
            estr.push(e);
        }
        let gdim: Vec<u64> = box_dim
            .iter()
            .zip(&estr)
            .enumerate()
            .map(|(i, (&bd, &e))| {
                let reach = if i == 0 { bd as u64 } else { bd as u64 * e as u64 };
                1 + rng.below(reach * 2 + 4)
            })
            .collect();
        let mut strides = vec![];
        let mut prev = (gdim[0] * es).div_ceil(16) * 16 + 16 * rng.below(3);
        for i in 1..rank {
            strides.push(prev);
            prev = prev * gdim[i] + 16 * rng.below(3);
        }
        let gaddr = GBASE + 16 * rng.below(1 << 12);
        let mut spec = TensorMapSpec::tiled(dt, gaddr, gdim, strides, box_dim);
        spec.element_strides = estr;
        spec.swizzle = sw;
        if dt.is_float() && rng.pct(50) {
            spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
        }
        if let Ok(m) = TensorMap::new(spec) {
            let d = TmaDescImage::from_bytes(&m.encode());
            return (m, d);
        }
    }
}

/// A random valid im2col map (PTX 5.5.4): rank 3..=5, every element size, swizzles, element
/// strides, pixel box corners (small, sometimes at the rank's range ends), at most 2 KiB
/// per box over small tensors so that pixels reach every edge.
pub(crate) fn random_im2col_map(rng: &mut XorShift) -> (TensorMap, TmaDescImage) {
    loop {
        let dt = DTYPES[rng.below(8) as usize];
        let es = dt.element_size().unwrap() as u64;
        let rank = 3 + rng.below(3) as usize;
        let sw = [TensorMapSwizzle::None, TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128][rng.below(5) as usize];
        let max_row = sw.span_bytes().map(|s| s as u64).unwrap_or(256).min(256 * es).min(256);
        let rowbytes = 16 * (1 + rng.below(max_row / 16));
        let cpp = (rowbytes / es) as u32;
        let pixels = 1 + rng.below((2048 / rowbytes).clamp(1, 64)) as u32;
        let range = [32767i64, 127, 15][rank - 3];
        let mut gdim = vec![1 + rng.below(2 * cpp as u64 + 4)];
        let (mut lower, mut upper) = (vec![], vec![]);
        for _ in 0..rank - 2 {
            let d = 1 + rng.below(10);
            gdim.push(d);
            let corner = |rng: &mut XorShift| -> i32 {
                if rng.pct(5) {
                    [-range - 1, range][rng.below(2) as usize] as i32
                } else {
                    rng.below(7) as i32 - 3
                }
            };
            lower.push(corner(rng));
            upper.push(corner(rng));
        }
        gdim.push(1 + rng.below(4));
        let estr: Vec<u32> = (0..rank).map(|_| if rng.pct(50) { 1 } else { 1 + rng.below(8) as u32 }).collect();
        let mut strides = vec![];
        let mut prev = (gdim[0] * es).div_ceil(16) * 16 + 16 * rng.below(3);
        for i in 1..rank {
            strides.push(prev);
            prev = prev * gdim[i] + 16 * rng.below(3);
        }
        let gaddr = GBASE + 16 * rng.below(1 << 12);
        let mut spec = TensorMapSpec::im2col(dt, gaddr, gdim, strides, lower, upper, cpp, pixels);
        spec.element_strides = estr;
        spec.swizzle = sw;
        if dt.is_float() && rng.pct(50) {
            spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
        }
        if let Ok(m) = TensorMap::new(spec) {
            let d = TmaDescImage::from_bytes(&m.encode());
            return (m, d);
        }
    }
}

/// im2col coordinates and offsets: the channel start anywhere around dimension 0 (not
/// 16-byte aligned: that rule is tile mode's), the pixel anywhere from before the lower
/// corner to past the upper one (rarely at the ends of the 32-bit range), offsets small
/// or at the rank's limit.
pub(crate) fn random_im2col_coords(rng: &mut XorShift, m: &TensorMap) -> (Vec<i64>, Vec<i64>) {
    let s = m.spec();
    let r = m.rank();
    let cpp = s.channels_per_pixel as i64;
    let obits = [16u32, 8, 5][r - 3];
    let offs: Vec<i64> = (0..r - 2)
        .map(|_| if rng.pct(10) { (1i64 << obits) - 1 - rng.below(2) as i64 } else { rng.below(4) as i64 })
        .collect();
    let mut c = vec![-cpp - 2 + rng.below(s.global_dim[0] + 2 * cpp as u64 + 4) as i64];
    for i in 1..r {
        let d = s.global_dim[i] as i64;
        let x = if rng.pct(3) {
            [i32::MIN as i64 + rng.below(4) as i64, i32::MAX as i64 - rng.below(4) as i64][rng.below(2) as usize]
        } else if i < r - 1 {
            let lo = s.pixel_box_lower_corner[i - 1] as i64 - offs[i - 1];
            let hi = d + s.pixel_box_upper_corner[i - 1] as i64;
            let (lo, hi) = (lo.min(hi) - 3, lo.max(hi) + 3);
            lo + rng.below((hi - lo + 1) as u64) as i64
        } else {
            -2 + rng.below(d as u64 + 4) as i64
        };
        c.push(x);
    }
    (c, offs)
}

/// Coordinates anywhere from fully before to fully after the tensor in every dimension.
pub(crate) fn random_coords(rng: &mut XorShift, m: &TensorMap) -> Vec<i64> {
    let s = m.spec();
    (0..m.rank())
        .map(|i| {
            let reach = s.box_dim[i] as i64 * if i == 0 { 1 } else { s.element_strides[i] as i64 };
            let d = s.global_dim[i] as i64;
            if rng.pct(40) {
                rng.below((d - reach).max(0) as u64 + 1) as i64
            } else {
                -reach - 2 + rng.below((d + 2 * reach + 4) as u64) as i64
            }
        })
        .collect()
}

pub(crate) fn random_mask(rng: &mut XorShift) -> u16 {
    if rng.pct(70) {
        1 << rng.below(16)
    } else {
        let mut m = 0u16;
        for _ in 0..2 + rng.below(3) {
            m |= 1 << rng.below(16);
        }
        m
    }
}

/// Queues one random command; returns true for a copy (load or store).
pub(crate) fn random_command(tb: &mut Tb, rng: &mut XorShift) -> bool {
    // stores and commits of up to 8 threads of different warps and lanes (a context each)
    tb.thread = [0, 1, 37, 64, 130, 300, 777, 1023][rng.below(8) as usize];
    let r = rng.below(100);
    let smem_t = 128 * rng.below(1000) as u32;
    let smem_b = 16 * rng.below(8000) as u32;
    let word = rng.below(1 << 16) as u16;
    if r < 52 {
        if rng.pct(20) {
            let m = random_im2col_map(rng);
            let (c, o) = random_im2col_coords(rng, &m.0);
            load_o(tb, &m, &c, &o, smem_t, random_mask(rng), word);
        } else {
            let m = random_map(rng);
            let c = random_coords(rng, &m.0);
            load_t(tb, &m, &c, smem_t, random_mask(rng), word);
        }
    } else if r < 67 {
        if rng.pct(15) {
            let m = random_im2col_map(rng);
            let (c, o) = random_im2col_coords(rng, &m.0);
            store_o(tb, &m, &c, &o, smem_t);
        } else {
            let m = random_map(rng);
            let c = random_coords(rng, &m.0);
            store_t(tb, &m, &c, smem_t);
        }
    } else if r < 79 {
        let sr = if rng.pct(90) { 24 } else { 128 };
        let size = 16 * rng.below(sr) as u32;
        match rng.below(10) {
            0 => prefetch_b(tb, GBASE + 16 * rng.below(1 << 16), size),
            1 => {
                if rng.pct(30) {
                    let m = random_im2col_map(rng);
                    let (c, o) = random_im2col_coords(rng, &m.0);
                    prefetch_o(tb, &m, &c, &o);
                } else {
                    let m = random_map(rng);
                    let c = random_coords(rng, &m.0);
                    prefetch_t(tb, &m, &c);
                }
            }
            2 | 3 => {
                const REDS: [(TmaRedOp, TmaRedType); 4] = [
                    (TmaRedOp::Copy, TmaRedType::B32),
                    (TmaRedOp::Add, TmaRedType::U32),
                    (TmaRedOp::Max, TmaRedType::S32),
                    (TmaRedOp::Xor, TmaRedType::B64),
                ];
                let red = REDS[rng.below(4) as usize];
                let dst = 16 * rng.below(8000) as u32;
                s2s_b(tb, smem_b, dst, size, rng.below(16) as u8, word, red);
            }
            _ => load_b(tb, GBASE + 16 * rng.below(1 << 16), smem_b, size, random_mask(rng), word),
        }
    } else if r < 88 {
        let size = 16 * rng.below(24) as u32;
        store_b(tb, GBASE + 16 * rng.below(1 << 16), smem_b, size);
    } else if r < 96 {
        tb.push_commit();
        return false;
    } else {
        // refused commands: misaligned shared address, wrong .Nd, a corrupted header
        let m = random_map(rng);
        let c = random_coords(rng, &m.0);
        let store = rng.pct(50);
        let kind = if store { TmaCmdKind::TensorStore } else { TmaCmdKind::TensorLoad };
        let mut cm = tensor(kind, m.0.rank(), &c, smem_t, random_mask(rng), word);
        let mut d = m.1;
        let f = match rng.below(4) {
            0 => {
                cm.smem = ((smem_t + 16 * (1 + rng.below(7) as u32)) as u64).into();
                TmaFaultKind::TmaMisaligned
            }
            1 => {
                cm.dims = ((m.0.rank() as u64 % 5) + 1).into();
                TmaFaultKind::TmaCoordOutOfRange
            }
            2 => {
                let mut img = m.0.encode();
                img[0] ^= 1 << rng.below(8);
                assert!(TensorMap::decode(&img).is_err());
                d = TmaDescImage::from_bytes(&img);
                TmaFaultKind::TensorMapInvalid
            }
            _ => {
                let mut img = m.0.encode();
                let bit = 626 + rng.below(1024 - 626) as usize;
                img[bit / 8] ^= 1 << (bit % 8);
                assert!(TensorMap::decode(&img).is_err());
                d = TmaDescImage::from_bytes(&img);
                TmaFaultKind::TensorMapInvalid
            }
        };
        tb.push(
            cm,
            d,
            Exp {
                fault: Some(f),
                ..Default::default()
            },
        );
        return false;
    }
    true
}

/// Drives `copies` random copies (plus commits and refused commands), checking every
/// output against the reference; returns the statistics.
pub(crate) fn run_random(tb: &mut Tb, seed: u64, copies: u64) -> Stats {
    tb.nthreads = 4;
    let mut rng = XorShift(seed);
    let mut n = 0;
    let t0 = std::time::Instant::now();
    while n < copies {
        while tb.pending.len() < 3 && n < copies {
            if random_command(tb, &mut rng) {
                n += 1;
            }
        }
        tb.step();
    }
    tb.drain();
    let dt = t0.elapsed().as_secs_f64();
    eprintln!(
        "{n} copies in {} cycles, {dt:.2} s: {:.0} cycles/s; {:?}",
        tb.st.cycles,
        tb.st.cycles as f64 / dt,
        tb.st
    );
    std::mem::take(&mut tb.st)
}


// ------------------------------------------------------------------ one block alone

/// A stage block with a clock: its own tests drive it one cycle at a time.
pub(crate) trait Clocked: Block + Sized {
    /// the block's clock input
    fn clk(&mut self) -> &mut Signal<In, Clock>;
    /// Clock low: the inputs just set settle; the outputs are this cycle's.
    fn low(&mut self) {
        self.clk().next = false.into();
        assert!(simulate(self, 200), "the block settles");
    }
    /// The rising edge.
    fn edge(&mut self) {
        self.clk().next = true.into();
        assert!(simulate(self, 200), "the block settles");
    }
}

macro_rules! clocked {
    ($($t:ty),*) => {
        $(impl Clocked for $t {
            fn clk(&mut self) -> &mut Signal<In, Clock> {
                &mut self.clock
            }
        })*
    };
}
clocked!(
    super::queue::TmaQueue,
    super::groups::TmaGroups,
    super::decoder::TmaDecoder,
    super::dec_dim::TmaDimStep,
    super::rg::TmaRowIter,
    super::issuer::TmaIssuer,
    super::rob::TmaRob,
    super::ba_x::TmaSlotIter,
    super::ba_y::TmaRealign,
    super::obuf::TmaOutBuf,
    super::cpl::TmaComplete,
    super::wbuf::TmaWriteBuf
);

impl<T: Synth, const A: usize, const C: usize> Clocked for super::fifo::TmaFifo<T, A, C> {
    fn clk(&mut self) -> &mut Signal<In, Clock> {
        &mut self.clock
    }
}

/// A block, connected and settled at reset.
pub(crate) fn block<B: Block>(mut b: B) -> Box<B> {
    b.connect_all();
    assert!(simulate(&mut b, 200), "the block settles");
    Box::new(b)
}

/// Settles a combinational block after its inputs changed.
pub(crate) fn comb<B: Block>(b: &mut B) {
    assert!(simulate(b, 200), "the block settles");
}
