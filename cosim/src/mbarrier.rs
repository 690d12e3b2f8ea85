//! The mbarrier object's state as one 64-bit shared-memory word, in sm_90's own encoding as
//! measured on silicon (docs/MBARRIER_ENCODING.md), and every operation on it as a pure function
//! `word -> Result<word', finding>` (PTX 9.7.13.15). The golden model calls these; the RTL unit's
//! randomized tests compare against them.
//!
//! Layout (bit 0 = LSB). Counts are stored as complements that count up towards zero, so a
//! phase is complete when the pending field and the tx field are both zero:
//!
//! | bits | field | encoding |
//! | --- | --- | --- |
//! | 0 | unused | 0 after init, carried unchanged |
//! | 1..=20 | expected arrivals `E` | `(2^20 - expected) mod 2^20` |
//! | 21..=41 | tx-count `F` | `(-tx) mod 2^21` (21-bit two's complement of -tx) |
//! | 42 | must be 0 | silicon traps when it is set |
//! | 43..=62 | pending arrivals `P` | `(2^20 - pending) mod 2^20` |
//! | 63 | phase parity | bit 0 of the phase number; no other bit counts phases |
//!
//! The arrive token is the word's bits 32..=63 as they were before the operation, in bits
//! 32..=63. Its bits 0..=31 are not written by silicon for plain arrives (undefined; the golden
//! model writes 0 and comparisons ignore them) and hold the lane-group mask for `.noComplete`.
//!
//! [`layout`] describes the fields with bitvec and a test checks the shift-based hot path
//! against it.

use crate::finding::FindingKind;

/// Largest arrival count (PTX 9.7.13.15.2: 2^20 - 1).
pub const MAX_COUNT: u32 = (1 << 20) - 1;
/// Largest |tx-count| (PTX 9.7.13.15.2: 2^20 - 1).
pub const MAX_TX: i32 = (1 << 20) - 1;

const M20: u64 = (1 << 20) - 1;
const M21: u64 = (1 << 21) - 1;
const E_SHIFT: u32 = 1;
const F_SHIFT: u32 = 21;
const BIT42: u64 = 1 << 42;
const P_SHIFT: u32 = 43;
const PARITY: u64 = 1 << 63;

/// The decoded fields of an mbarrier word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MbarrierState {
    /// Arrivals still missing in the current phase.
    pub pending_arrivals: u32,
    /// Arrivals each phase expects (reloads `pending_arrivals` at phase completion).
    pub expected_arrivals: u32,
    /// Outstanding asynchronous transactions tracked by the current phase.
    pub tx_count: i32,
    /// Phase parity (bit 0 of the phase number).
    pub phase_parity: bool,
    /// Bit 0 of the word (unused; carried).
    pub bit0: bool,
    /// Bit 42 of the word (must be 0).
    pub bit42: bool,
}

/// `(2^20 - x) mod 2^20`.
#[inline]
fn comp20(x: u64) -> u64 {
    (1u64 << 20).wrapping_sub(x) & M20
}

impl MbarrierState {
    /// Decodes a word. A pending or expected field of 0 decodes as 2^20 when the other fields
    /// say the count cannot be 0; here 0 means 0 (a completed-arrivals phase), as silicon reads it.
    #[inline]
    pub fn decode(word: u64) -> MbarrierState {
        let e = (word >> E_SHIFT) & M20;
        let f = (word >> F_SHIFT) & M21;
        let p = (word >> P_SHIFT) & M20;
        // F = (-tx) mod 2^21, read as 21-bit two's complement.
        let neg_tx = ((f << 43) as i64) >> 43;
        MbarrierState {
            pending_arrivals: comp20(p) as u32,
            expected_arrivals: comp20(e) as u32,
            tx_count: (-neg_tx) as i32,
            phase_parity: word & PARITY != 0,
            bit0: word & 1 != 0,
            bit42: word & BIT42 != 0,
        }
    }

    /// Encodes a state.
    #[inline]
    pub fn encode(&self) -> u64 {
        let f = ((-(self.tx_count as i64)) as u64) & M21;
        (self.bit0 as u64)
            | comp20(self.expected_arrivals as u64) << E_SHIFT
            | f << F_SHIFT
            | (self.bit42 as u64) << 42
            | comp20(self.pending_arrivals as u64) << P_SHIFT
            | (self.phase_parity as u64) << 63
    }

    /// PTX 9.7.13.15.6: the phase completes when pending arrivals and tx-count are both zero;
    /// then the parity flips and pending reloads from expected. Silicon checks this after
    /// arrive, expect_tx and complete_tx alike.
    fn complete_if_done(&mut self) -> bool {
        if self.pending_arrivals == 0 && self.tx_count == 0 {
            self.phase_parity = !self.phase_parity;
            self.pending_arrivals = self.expected_arrivals;
            true
        } else {
            false
        }
    }
}

/// The field layout as bitvec ranges (documentation and cross-check of the shift code).
pub mod layout {
    use bitvec::prelude::*;

    /// `(field, bit range)` of the word.
    pub const FIELDS: &[(&str, std::ops::Range<usize>)] = &[
        ("unused", 0..1),
        ("expected_arrivals_complement", 1..21),
        ("tx_count_negated", 21..42),
        ("must_be_zero", 42..43),
        ("pending_arrivals_complement", 43..63),
        ("phase_parity", 63..64),
    ];

    /// Reads a field by name with bitvec.
    pub fn field(word: u64, name: &str) -> u64 {
        let r = FIELDS.iter().find(|(n, _)| *n == name).map(|(_, r)| r.clone()).expect("field name");
        word.view_bits::<Lsb0>()[r].load_le::<u64>()
    }

    /// Builds a word from `(name, value)` pairs with bitvec.
    pub fn build(values: &[(&str, u64)]) -> u64 {
        let mut w = 0u64;
        for (name, v) in values {
            let r = FIELDS.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone()).expect("field name");
            w.view_bits_mut::<Lsb0>()[r].store_le(*v);
        }
        w
    }
}

/// An arrive-on request (PTX 9.7.13.15.13 / .14). A warp's plain arrives on one object merge
/// into one request with the counts and tx amounts summed (silicon, docs/MBARRIER_ENCODING.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrive {
    /// Arrival count.
    pub count: u32,
    /// `.expect_tx` amount applied before the arrive (0 when absent).
    pub expect_tx: u32,
    /// `.noComplete`: the arrive must not complete the phase (PTX: otherwise undefined).
    pub no_complete: bool,
    /// `arrive_drop`: also lowers the expected count of later phases.
    pub drop: bool,
}

/// What an arrive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArriveResult {
    /// The new word.
    pub word: u64,
    /// The arrive state token: bits 32..=63 of the word before the operation (low half 0).
    pub token: u64,
    /// Whether this arrive completed the phase.
    pub completed: bool,
}

/// `mbarrier.init`: PTX 9.7.13.15.9; count must be in 1..=2^20-1 (9.7.13.15.2). Silicon writes
/// `hi32 = (2^20-c) << 11`, `lo32 = (2^20-c) << 1`.
pub fn init(count: u64) -> Result<u64, FindingKind> {
    if count == 0 || count > MAX_COUNT as u64 {
        return Err(FindingKind::MbarrierCountOutOfRange);
    }
    let c = count as u32;
    Ok(MbarrierState { pending_arrivals: c, expected_arrivals: c, ..Default::default() }.encode())
}

/// `mbarrier.inval`: PTX 9.7.13.15.10. Silicon writes the current state back to the word and
/// drops its cache entry, so the word is unchanged.
pub fn inval(word: u64) -> u64 {
    word
}

fn add_tx(s: &mut MbarrierState, delta: i64) -> Result<(), FindingKind> {
    let t = s.tx_count as i64 + delta;
    if t.abs() > MAX_TX as i64 {
        return Err(FindingKind::MbarrierTxCountOutOfRange);
    }
    s.tx_count = t as i32;
    Ok(())
}

/// The token of an operation on `word`: its high half.
#[inline]
pub fn token_of(word: u64) -> u64 {
    word & 0xffff_ffff_0000_0000
}

/// An arrive-on operation, with optional expect-tx first (PTX 9.7.13.15.7, 9.7.13.15.13).
pub fn arrive(word: u64, a: Arrive) -> Result<ArriveResult, FindingKind> {
    let mut s = MbarrierState::decode(word);
    if a.count == 0 || a.count > MAX_COUNT {
        return Err(FindingKind::MbarrierCountOutOfRange);
    }
    if a.expect_tx > 0 {
        add_tx(&mut s, a.expect_tx as i64)?;
    }
    if a.count > s.pending_arrivals {
        // Silicon traps here (an arrive whose count exceeds the pending count).
        return Err(FindingKind::MbarrierPendingUnderflow);
    }
    s.pending_arrivals -= a.count;
    if a.drop {
        // PTX 9.7.13.15.14: arrive_drop lowers the expected count for later phases.
        if a.count >= s.expected_arrivals {
            return Err(FindingKind::MbarrierCountOutOfRange);
        }
        s.expected_arrivals -= a.count;
    }
    if a.no_complete && s.pending_arrivals == 0 && s.tx_count == 0 {
        // PTX 9.7.13.15.13: undefined if a .noComplete arrive completes the phase (silicon
        // completes it; the golden model names it).
        return Err(FindingKind::MbarrierNoCompleteCompleted);
    }
    let completed = s.complete_if_done();
    Ok(ArriveResult { word: s.encode(), token: token_of(word), completed })
}

/// `mbarrier.expect_tx` (PTX 9.7.13.15.11): raises tx-count. Silicon checks phase completion
/// after it too (an expect-tx that brings a negative tx-count to 0 with no arrivals pending
/// completes the phase). Returns the new word and whether the phase completed.
pub fn expect_tx(word: u64, tx: u32) -> Result<(u64, bool), FindingKind> {
    let mut s = MbarrierState::decode(word);
    add_tx(&mut s, tx as i64)?;
    let done = s.complete_if_done();
    Ok((s.encode(), done))
}

/// complete-tx (PTX 9.7.13.15.5.2, 9.7.13.15.12): lowers tx-count, may complete the phase.
pub fn complete_tx(word: u64, tx: u32) -> Result<(u64, bool), FindingKind> {
    let mut s = MbarrierState::decode(word);
    add_tx(&mut s, -(tx as i64))?;
    let done = s.complete_if_done();
    Ok((s.encode(), done))
}

/// test_wait / try_wait with a state token (PTX 9.7.13.15.16). Silicon compares the token's bit
/// 63 with the current parity and nothing else; whether the token's phase is the current or the
/// immediately preceding one is the golden model's side check.
pub fn test_wait_token(word: u64, token: u64) -> bool {
    (token & PARITY != 0) != (word & PARITY != 0)
}

/// test_wait / try_wait `.parity` (PTX 9.7.13.15.16): `phase_parity` names the parity of the phase
/// waited on; it has completed when the current parity differs.
pub fn test_wait_parity(word: u64, phase_parity: bool) -> bool {
    (word & PARITY != 0) != phase_parity
}

/// `mbarrier.pending_count` (PTX 9.7.13.15.17): silicon computes `2^20 - token[43..=62]`
/// (so a token with a zero pending field reads 2^20).
pub fn pending_count(token: u64) -> u32 {
    ((1u64 << 20) - ((token >> P_SHIFT) & M20)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words measured on an H200 (docs/MBARRIER_ENCODING.md, "init count / word").
    #[test]
    fn init_matches_silicon() {
        for (c, w) in [
            (1u64, 0x7ffff800_001ffffeu64),
            (2, 0x7ffff000_001ffffc),
            (3, 0x7fffe800_001ffffa),
            (32, 0x7fff0000_001fffc0),
            (1000, 0x7fe0c000_001ff830),
            (0x12345, 0x76e5d800_001db976),
            ((1 << 20) - 1, 0x00000800_00000002),
        ] {
            assert_eq!(init(c).unwrap(), w, "init {c}");
        }
    }

    #[test]
    fn shift_codec_matches_the_bitvec_layout() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = x & !BIT42;
            let s = MbarrierState::decode(w);
            assert_eq!(s.encode(), w);
            assert_eq!(layout::field(w, "pending_arrivals_complement"), comp20(s.pending_arrivals as u64));
            assert_eq!(layout::field(w, "expected_arrivals_complement"), comp20(s.expected_arrivals as u64));
            assert_eq!(layout::field(w, "tx_count_negated"), ((-(s.tx_count as i64)) as u64) & M21);
            assert_eq!(layout::field(w, "phase_parity"), s.phase_parity as u64);
            let rebuilt = layout::build(&[
                ("unused", w & 1),
                ("expected_arrivals_complement", (w >> 1) & M20),
                ("tx_count_negated", (w >> 21) & M21),
                ("pending_arrivals_complement", (w >> 43) & M20),
                ("phase_parity", w >> 63),
            ]);
            assert_eq!(rebuilt, w);
        }
    }

    #[test]
    fn tx_pending_word_matches_silicon() {
        // docs/MBARRIER_ENCODING.md: pending 0 with tx 8 outstanding reads 0x000003ff_ff1ffffe.
        let w = init(1).unwrap();
        let a = arrive(w, Arrive { count: 1, expect_tx: 8, ..Default::default() }).unwrap();
        assert!(!a.completed);
        assert_eq!(a.word, 0x000003ff_ff1ffffe);
    }

    #[test]
    fn phases_advance_and_tokens_track_them() {
        let w = init(2).unwrap();
        let a = arrive(w, Arrive { count: 1, ..Default::default() }).unwrap();
        assert!(!a.completed);
        assert!(!test_wait_token(a.word, a.token));
        assert_eq!(pending_count(a.token), 2);
        let b = arrive(a.word, Arrive { count: 1, ..Default::default() }).unwrap();
        assert!(b.completed);
        assert!(test_wait_token(b.word, a.token));
        assert!(test_wait_parity(b.word, false));
        assert!(!test_wait_parity(b.word, true));
        assert_eq!(MbarrierState::decode(b.word).pending_arrivals, 2);
        // The token of the completing arrive shows the old parity and pending = its count.
        assert_eq!(pending_count(b.token), 1);
        assert_eq!(b.token >> 63, 0);
    }

    #[test]
    fn tx_count_holds_the_phase_and_expect_tx_can_complete() {
        let w = init(1).unwrap();
        let a = arrive(w, Arrive { count: 1, expect_tx: 64, ..Default::default() }).unwrap();
        assert!(!a.completed);
        let (w2, done) = complete_tx(a.word, 32).unwrap();
        assert!(!done);
        let (w3, done) = complete_tx(w2, 32).unwrap();
        assert!(done);
        assert!(MbarrierState::decode(w3).phase_parity);
        // complete_tx 100 first (tx -100), arrive, then expect_tx 60 + 40 completes (silicon).
        let (w4, _) = complete_tx(init(1).unwrap(), 100).unwrap();
        let b = arrive(w4, Arrive { count: 1, ..Default::default() }).unwrap();
        assert!(!b.completed);
        let (w5, d1) = expect_tx(b.word, 60).unwrap();
        let (_, d2) = expect_tx(w5, 40).unwrap();
        assert!(!d1 && d2);
        assert_eq!(complete_tx(init(1).unwrap(), MAX_TX as u32 + 1), Err(FindingKind::MbarrierTxCountOutOfRange));
    }

    #[test]
    fn findings() {
        assert_eq!(init(0), Err(FindingKind::MbarrierCountOutOfRange));
        assert_eq!(init(1 << 20), Err(FindingKind::MbarrierCountOutOfRange));
        let w = init(2).unwrap();
        assert_eq!(arrive(w, Arrive { count: 3, ..Default::default() }), Err(FindingKind::MbarrierPendingUnderflow));
        assert_eq!(arrive(w, Arrive { count: 2, no_complete: true, ..Default::default() }), Err(FindingKind::MbarrierNoCompleteCompleted));
        let a = arrive(w, Arrive { count: 1, no_complete: true, ..Default::default() }).unwrap();
        assert_eq!(pending_count(a.token), 2);
    }

    #[test]
    fn arrive_drop_lowers_later_phases() {
        let w = init(3).unwrap();
        let a = arrive(w, Arrive { count: 1, drop: true, ..Default::default() }).unwrap();
        let b = arrive(a.word, Arrive { count: 2, ..Default::default() }).unwrap();
        assert!(b.completed);
        assert_eq!(MbarrierState::decode(b.word).pending_arrivals, 2);
    }
}
