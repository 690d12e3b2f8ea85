//! The mbarrier object's state as one 64-bit shared-memory word, and every operation on it as a
//! pure function `word -> Result<word', finding>` (PTX 9.7.13.15). The golden model calls these;
//! the RTL unit's randomized tests compare against them.
//!
//! Layout (docs/DESIGN.md, ours until the silicon issue pins down sm_90's):
//!
//! | bits | field |
//! | --- | --- |
//! | 0..=19 | pending_arrivals |
//! | 20..=39 | expected_arrivals |
//! | 40..=60 | tx_count (21-bit two's complement) |
//! | 61..=62 | phase bits 1..2 |
//! | 63 | phase_parity (phase bit 0) |

use crate::finding::FindingKind;
use bitvec::prelude::*;

/// Largest arrival count (PTX 9.7.13.15.2: 2^20 - 1).
pub const MAX_COUNT: u32 = (1 << 20) - 1;
/// Largest |tx-count| (PTX 9.7.13.15.2: 2^20 - 1).
pub const MAX_TX: i32 = (1 << 20) - 1;

/// The decoded fields of an mbarrier word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MbarrierState {
    /// Arrivals still missing in the current phase.
    pub pending_arrivals: u32,
    /// Arrivals the next phase will expect (reinitializes `pending_arrivals` at phase completion).
    pub expected_arrivals: u32,
    /// Outstanding asynchronous transactions tracked by the current phase.
    pub tx_count: i32,
    /// Phase number modulo 8 (bit 0 is the phase parity).
    pub phase: u8,
}

impl MbarrierState {
    /// Decodes a word.
    pub fn decode(word: u64) -> MbarrierState {
        let b = word.view_bits::<Lsb0>();
        let tx: u32 = b[40..61].load_le();
        // Sign-extend the 21-bit field.
        let tx_count = ((tx << 11) as i32) >> 11;
        let phase_hi: u8 = b[61..63].load_le();
        MbarrierState {
            pending_arrivals: b[0..20].load_le(),
            expected_arrivals: b[20..40].load_le(),
            tx_count,
            phase: (phase_hi << 1) | b[63] as u8,
        }
    }

    /// Encodes to a word.
    pub fn encode(&self) -> u64 {
        let mut w = 0u64;
        let b = w.view_bits_mut::<Lsb0>();
        b[0..20].store_le(self.pending_arrivals & MAX_COUNT);
        b[20..40].store_le(self.expected_arrivals & MAX_COUNT);
        b[40..61].store_le((self.tx_count as u32) & 0x1F_FFFF);
        b[61..63].store_le((self.phase >> 1) & 3);
        b.set(63, self.phase & 1 == 1);
        w
    }

    /// Phase parity (PTX 9.7.13.15.16 `.parity` forms).
    pub fn phase_parity(&self) -> bool {
        self.phase & 1 == 1
    }

    /// PTX 9.7.13.15.6: the phase completes when pending arrivals and tx-count are both zero;
    /// then the phase advances and pending arrivals reload from the expected count.
    fn complete_if_done(&mut self) -> bool {
        if self.pending_arrivals == 0 && self.tx_count == 0 {
            self.phase = (self.phase + 1) & 7;
            self.pending_arrivals = self.expected_arrivals;
            true
        } else {
            false
        }
    }
}

/// An arrive-on request (PTX 9.7.13.15.13 / .14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrive {
    /// Arrival count (1 when not given).
    pub count: u32,
    /// `.expect_tx` amount applied before the arrive (0 when absent).
    pub expect_tx: u32,
    /// `.noComplete`: the arrive must not complete the phase.
    pub no_complete: bool,
    /// `arrive_drop`: also lowers the expected count of later phases.
    pub drop: bool,
}

/// What an arrive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArriveResult {
    /// The new word.
    pub word: u64,
    /// The arrive state token: the word before the arrive (PTX 9.7.13.15.17 reads the pending
    /// count "prior to the arrive-on operation" from it).
    pub token: u64,
    /// Whether this arrive completed the phase.
    pub completed: bool,
}

/// `mbarrier.init`: PTX 9.7.13.15.9; count must be in 1..=2^20-1 (9.7.13.15.2).
pub fn init(count: u64) -> Result<u64, FindingKind> {
    if count == 0 || count > MAX_COUNT as u64 {
        return Err(FindingKind::MbarrierCountOutOfRange);
    }
    let c = count as u32;
    Ok(MbarrierState { pending_arrivals: c, expected_arrivals: c, tx_count: 0, phase: 0 }.encode())
}

/// `mbarrier.inval`: PTX 9.7.13.15.10. The word reads as zero afterwards in our encoding.
pub fn inval() -> u64 {
    0
}

fn add_tx(s: &mut MbarrierState, delta: i64) -> Result<(), FindingKind> {
    let t = s.tx_count as i64 + delta;
    if t.abs() > MAX_TX as i64 {
        return Err(FindingKind::MbarrierTxCountOutOfRange);
    }
    s.tx_count = t as i32;
    Ok(())
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
        return Err(FindingKind::MbarrierPendingUnderflow);
    }
    s.pending_arrivals -= a.count;
    if a.drop {
        // PTX 9.7.13.15.14: arrive_drop lowers the expected count for this and later phases.
        if a.count > s.expected_arrivals {
            return Err(FindingKind::MbarrierPendingUnderflow);
        }
        s.expected_arrivals -= a.count;
    }
    if a.no_complete && s.pending_arrivals == 0 && s.tx_count == 0 {
        // PTX 9.7.13.15.13: ".noComplete ... the behavior is undefined if the arrive completes the phase".
        return Err(FindingKind::MbarrierNoCompleteCompleted);
    }
    let completed = s.complete_if_done();
    Ok(ArriveResult { word: s.encode(), token: word, completed })
}

/// `mbarrier.expect_tx`: PTX 9.7.13.15.11 (expect-tx operation, 9.7.13.15.5.1).
pub fn expect_tx(word: u64, tx: u32) -> Result<u64, FindingKind> {
    let mut s = MbarrierState::decode(word);
    add_tx(&mut s, tx as i64)?;
    Ok(s.encode())
}

/// complete-tx (PTX 9.7.13.15.5.2, 9.7.13.15.12): lowers tx-count, may complete the phase.
/// Returns the new word and whether the phase completed.
pub fn complete_tx(word: u64, tx: u32) -> Result<(u64, bool), FindingKind> {
    let mut s = MbarrierState::decode(word);
    add_tx(&mut s, -(tx as i64))?;
    let done = s.complete_if_done();
    Ok((s.encode(), done))
}

/// test_wait / try_wait with a state token (PTX 9.7.13.15.16): true when the token's phase has
/// completed. The token must name the current or the immediately preceding phase.
pub fn test_wait_token(word: u64, token: u64) -> Result<bool, FindingKind> {
    let now = MbarrierState::decode(word).phase;
    let then = MbarrierState::decode(token).phase;
    match now.wrapping_sub(then) & 7 {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(FindingKind::MbarrierWaitPhaseInvalid),
    }
}

/// test_wait / try_wait `.parity` (PTX 9.7.13.15.16): `phase_parity` names the parity of the phase
/// waited on; it has completed when the current parity differs.
pub fn test_wait_parity(word: u64, phase_parity: bool) -> bool {
    MbarrierState::decode(word).phase_parity() != phase_parity
}

/// `mbarrier.pending_count` (PTX 9.7.13.15.17): the pending count held in a token.
pub fn pending_count(token: u64) -> u32 {
    MbarrierState::decode(token).pending_arrivals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        for (p, e, t, ph) in [(0, 1, 0, 0), (5, 7, -3, 5), (MAX_COUNT, MAX_COUNT, MAX_TX, 7), (1, 2, -MAX_TX, 1)] {
            let s = MbarrierState { pending_arrivals: p, expected_arrivals: e, tx_count: t, phase: ph };
            assert_eq!(MbarrierState::decode(s.encode()), s);
        }
        // Parity sits in the top bit.
        let s = MbarrierState { pending_arrivals: 1, expected_arrivals: 1, tx_count: 0, phase: 1 };
        assert_eq!(s.encode() >> 63, 1);
    }

    #[test]
    fn phases_advance_and_tokens_track_them() {
        let mut w = init(2).unwrap();
        let a = arrive(w, Arrive { count: 1, ..Default::default() }).unwrap();
        assert!(!a.completed);
        assert!(!test_wait_token(a.word, a.token).unwrap());
        let b = arrive(a.word, Arrive { count: 1, ..Default::default() }).unwrap();
        assert!(b.completed);
        assert!(test_wait_token(b.word, a.token).unwrap());
        assert!(test_wait_parity(b.word, false));
        assert!(!test_wait_parity(b.word, true));
        w = b.word;
        assert_eq!(MbarrierState::decode(w).pending_arrivals, 2);
        // Two phases later the old token is neither current nor preceding.
        let c = arrive(w, Arrive { count: 2, ..Default::default() }).unwrap();
        assert_eq!(test_wait_token(c.word, a.token), Err(FindingKind::MbarrierWaitPhaseInvalid));
    }

    #[test]
    fn tx_count_holds_the_phase() {
        let w = init(1).unwrap();
        let a = arrive(w, Arrive { count: 1, expect_tx: 64, ..Default::default() }).unwrap();
        assert!(!a.completed);
        let (w2, done) = complete_tx(a.word, 32).unwrap();
        assert!(!done);
        let (w3, done) = complete_tx(w2, 32).unwrap();
        assert!(done);
        assert_eq!(MbarrierState::decode(w3).phase, 1);
        // complete_tx before expect_tx drives tx-count negative, which is legal within range.
        let (w4, done) = complete_tx(init(1).unwrap(), 16).unwrap();
        assert!(!done);
        assert_eq!(MbarrierState::decode(w4).tx_count, -16);
        assert_eq!(complete_tx(w4, MAX_TX as u32), Err(FindingKind::MbarrierTxCountOutOfRange));
    }

    #[test]
    fn findings() {
        assert_eq!(init(0), Err(FindingKind::MbarrierCountOutOfRange));
        assert_eq!(init(1 << 20), Err(FindingKind::MbarrierCountOutOfRange));
        let w = init(2).unwrap();
        assert_eq!(arrive(w, Arrive { count: 3, ..Default::default() }), Err(FindingKind::MbarrierPendingUnderflow));
        assert_eq!(
            arrive(w, Arrive { count: 2, no_complete: true, ..Default::default() }),
            Err(FindingKind::MbarrierNoCompleteCompleted)
        );
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
