//! TmaJobFin: the decoder's last step (combinational): the per-job constants that the
//! slot iterator (BA stage X) needs, derived from J once its dimensions are folded in.
//!
//! # Ports
//!
//! - `en` (in): a Fin cycle; otherwise every output is zero (the constants are only computed
//!   then, which keeps the Rust simulation fast).
//! - `store`, `rowbytes`, `lo_b`, `hi_b`, `rot` (in): J after the last dimension (or a bulk
//!   command's 1-row job).
//! - The constants below, which the decoder writes into J at its Fin cycle.
//!
//! # The constants
//!
//! A row is `rowbytes` bytes, its in-bounds bytes `[lo_b, hi_b)`, and it starts `rot` bytes into
//! a 16-byte chunk of global memory (shared memory holds the box dense and 16-byte aligned).
//! BA walks a row in slots of 16 bytes: `nb` beats per row; `ns_m1` is the last slot (one more
//! when the row is misaligned: a load's realigner needs the chunk after the last beat). A slot's
//! input is chunk `s` of the row's 16-byte aligned global span; its output unit is a shared-memory
//! beat (loads: unit = slot, or slot - 1 when misaligned: `d`) or a global chunk (stores). `ca`,
//! `cb`: the first and last chunk with an in-bounds byte; `jl`, `jh`: the first and last output
//! unit with one, whose byte masks are `lomask` / `himask`; `off`: the realigner's byte offset
//! (`rot` for loads, `-rot` for stores); `offa`: the byte offset of chunk `ca`; `empty`: no
//! in-bounds byte in a row (every row is OOB); `zero`: a row of no bytes (bulk size 0).

use rust_hdl::prelude::*;

/// The per-job constants.
#[derive(LogicBlock, Default)]
pub struct TmaJobFin {
    /// a Fin cycle
    pub en: Signal<In, bool>,
    /// store direction
    pub store: Signal<In, bool>,
    /// bytes per row
    pub rowbytes: Signal<In, Bits<24>>,
    /// in-bounds bytes of a row: from
    pub lo_b: Signal<In, Bits<24>>,
    /// to (exclusive)
    pub hi_b: Signal<In, Bits<24>>,
    /// the row start in global memory modulo 16
    pub rot: Signal<In, Bits<4>>,
    /// no in-bounds byte in a row
    pub empty: Signal<Out, bool>,
    /// zero bytes per row
    pub zero: Signal<Out, bool>,
    /// 16-byte beats per row
    pub nb: Signal<Out, Bits<16>>,
    /// last slot index of a row
    pub ns_m1: Signal<Out, Bits<16>>,
    /// first chunk with an in-bounds byte
    pub ca: Signal<Out, Bits<16>>,
    /// last such chunk
    pub cb: Signal<Out, Bits<16>>,
    /// first output unit with an in-bounds byte
    pub jl: Signal<Out, Bits<16>>,
    /// last such unit
    pub jh: Signal<Out, Bits<16>>,
    /// byte mask of unit `jl`
    pub lomask: Signal<Out, Bits<16>>,
    /// byte mask of unit `jh`
    pub himask: Signal<Out, Bits<16>>,
    /// realignment offset
    pub off: Signal<Out, Bits<4>>,
    /// loads with a misaligned row: output unit = slot - 1
    pub d: Signal<Out, bool>,
    /// byte offset of chunk `ca` from the row start
    pub offa: Signal<Out, Bits<24>>,
    /// in-bounds bytes start + rot
    ca_b: Signal<Local, Bits<24>>,
    /// in-bounds bytes end - 1 + rot
    cb_b: Signal<Local, Bits<24>>,
    /// output-unit mask range start (bytes)
    mlo: Signal<Local, Bits<24>>,
    /// output-unit mask range end - 1 (bytes)
    mhi: Signal<Local, Bits<24>>,
    /// the first unit's first in-bounds byte
    klo: Signal<Local, Bits<4>>,
    /// 15 - the last unit's last in-bounds byte
    khi: Signal<Local, Bits<4>>,
}

impl Logic for TmaJobFin {
    #[hdl_gen]
    fn update(&mut self) {
        self.empty.next = false;
        self.zero.next = false;
        self.nb.next = 0.into();
        self.ns_m1.next = 0.into();
        self.ca.next = 0.into();
        self.cb.next = 0.into();
        self.jl.next = 0.into();
        self.jh.next = 0.into();
        self.lomask.next = 0.into();
        self.himask.next = 0.into();
        self.off.next = 0.into();
        self.d.next = false;
        self.offa.next = 0.into();
        self.ca_b.next = 0.into();
        self.cb_b.next = 0.into();
        self.mlo.next = 0.into();
        self.mhi.next = 0.into();
        self.klo.next = 0.into();
        self.khi.next = 0.into();
        if self.en.val() {
            // (a shift, not `get_bits`: a part select of a struct field's slice is not Verilog)
            self.nb.next = bit_cast::<16, 24>(self.rowbytes.val() >> 4);
            self.ca_b.next = self.lo_b.val() + bit_cast::<24, 4>(self.rot.val());
            self.cb_b.next = self.hi_b.val() + bit_cast::<24, 4>(self.rot.val()) - 1;
            if self.store.val() {
                // a store's output unit is a global chunk: its bytes start rot bytes early
                self.mlo.next = self.ca_b.val();
                self.mhi.next = self.cb_b.val();
            } else {
                self.mlo.next = self.lo_b.val();
                self.mhi.next = self.hi_b.val() - 1;
            }
            self.klo.next = bit_cast::<4, 24>(self.mlo.val());
            self.khi.next = bits::<4>(15) - bit_cast::<4, 24>(self.mhi.val());
            self.empty.next = self.hi_b.val() <= self.lo_b.val();
            self.zero.next = self.nb.val() == 0;
            if self.nb.val() == 0 {
                self.ns_m1.next = 0.into();
            } else if self.rot.val() != 0 {
                self.ns_m1.next = self.nb.val();
            } else {
                self.ns_m1.next = self.nb.val() - 1;
            }
            self.ca.next = self.ca_b.val().get_bits::<16>(4);
            self.cb.next = self.cb_b.val().get_bits::<16>(4);
            self.jl.next = self.mlo.val().get_bits::<16>(4);
            self.jh.next = self.mhi.val().get_bits::<16>(4);
            self.offa.next = self.ca_b.val() & 0xFF_FFF0;
            self.lomask.next = bits::<16>(0xFFFF) << self.klo.val();
            self.himask.next = bits::<16>(0xFFFF) >> self.khi.val();
            if self.store.val() {
                self.off.next = bits::<4>(0) - self.rot.val();
                self.d.next = false;
            } else {
                self.off.next = self.rot.val();
                self.d.next = self.rot.val() != 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::{block, comb};

    /// Every row shape (rows of 0..=16 beats, in-bounds windows at every byte, each start
    /// offset, loads and stores): each output unit's byte mask is exactly its in-bounds bytes
    /// (a load's unit u covers row bytes 16u.., a store's global chunk u covers row bytes
    /// 16u - rot..), the chunks of the row's 16-byte aligned span that hold in-bounds bytes
    /// are ca..=cb, and a misaligned row has one more slot.
    #[test]
    fn masks_and_slots_by_definition() {
        let mut f = block(TmaJobFin::default());
        for store in [false, true] {
            for nb in 0..=16u64 {
                let rb = 16 * nb;
                for rot in 0..16u64 {
                    for lo in (0..=rb).step_by(3) {
                        for hi in (lo..=rb).step_by(5) {
                            f.en.next = true;
                            f.store.next = store;
                            f.rowbytes.next = rb.into();
                            f.lo_b.next = lo.into();
                            f.hi_b.next = hi.into();
                            f.rot.next = rot.into();
                            comb(&mut *f);
                            let g = |s: &Signal<Out, Bits<16>>| s.val().to_u64();
                            let ctx = format!("store {store} rowbytes {rb} rot {rot} [{lo}, {hi})");
                            assert_eq!(f.empty.val(), hi <= lo, "{ctx}");
                            assert_eq!((f.zero.val(), g(&f.nb)), (nb == 0, nb), "{ctx}");
                            let slots = if nb == 0 { 0 } else { nb - 1 + (rot != 0) as u64 };
                            assert_eq!(g(&f.ns_m1), slots, "{ctx}");
                            if hi <= lo {
                                continue;
                            }
                            // row byte b lies in chunk (b + rot) / 16 of the aligned span
                            assert_eq!((g(&f.ca), g(&f.cb)), ((lo + rot) / 16, (hi - 1 + rot) / 16), "{ctx}");
                            assert_eq!(f.offa.val().to_u64(), 16 * ((lo + rot) / 16), "{ctx}");
                            let shift = if store { rot } else { 0 };
                            let unit_mask = |u: u64| -> u64 {
                                (0..16).filter(|&i| (lo..hi).contains(&((16 * u + i).wrapping_sub(shift)))).map(|i| 1 << i).sum()
                            };
                            let (jl, jh) = (g(&f.jl), g(&f.jh));
                            for u in 0..=nb + 1 {
                                let m = if u < jl || u > jh {
                                    0
                                } else {
                                    (if u == jl { g(&f.lomask) } else { 0xFFFF }) & (if u == jh { g(&f.himask) } else { 0xFFFF })
                                };
                                assert_eq!(m, unit_mask(u), "{ctx}: unit {u}");
                            }
                            let (off, d) = (f.off.val().to_u64(), f.d.val());
                            assert_eq!((off, d), if store { ((16 - rot) % 16, false) } else { (rot, rot != 0) }, "{ctx}");
                        }
                    }
                }
            }
        }
    }
}
