//! The device heap of `malloc` and `free` (CUDA C++ Programming Guide, Dynamic Global Memory
//! Allocation and Operations): which of its addresses are allocated, quarantined or free.
//!
//! The heap is the address range `[HEAP_BASE, HEAP_BASE + HEAP_SPAN)`. An allocation of n bytes
//! takes a block of n rounded up to 256 bytes followed by a 256-byte guard gap, so that an access
//! running off its end is outside every allocation. At most [`HEAP_BYTES`] (8 MiB, CUDA's default
//! `cudaLimitMallocHeapSize`) are live at once; past that, or when no free range of the heap
//! fits, `malloc` returns NULL (CUDA: "returns NULL if ... insufficient memory").
//!
//! A freed block is quarantined, like AddressSanitizer's quarantine: its range is not handed out
//! again while other free space remains, so that an access through the freed pointer is named a
//! use after free and a second `free` a double free. Only an allocation that fits nowhere else
//! returns the oldest quarantined blocks to the free ranges (merged with free neighbours).
//! Programs that never run out of address space therefore get the addresses of a plain bump
//! allocator.
//!
//! Every structure is an ordered map: finding the block of an address, `malloc` and `free` take
//! O(log n) in the blocks, and the heap's own memory is proportional to its blocks, at most
//! [`MAX_BLOCKS`] of them (a block spans at least 512 addresses).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The device heap's first address (docs/DESIGN.md address map).
pub const HEAP_BASE: u64 = 0x0000_7c00_0000_0000;
/// Bytes the device heap holds at once (CUDA's default `cudaLimitMallocHeapSize`, 8 MiB).
pub const HEAP_BYTES: u64 = 8 << 20;
/// Addresses of the heap's range: room for [`HEAP_BYTES`] of the smallest blocks (each 512
/// addresses) twice over, the rest for the quarantine.
pub const HEAP_SPAN: u64 = 4 * HEAP_BYTES;
/// Allocation granule and guard gap (bytes): every block starts 256-byte aligned.
const GRANULE: u64 = 256;
/// The most blocks (live and quarantined) the heap's range can hold.
pub const MAX_BLOCKS: u64 = HEAP_SPAN / (2 * GRANULE);

/// A live allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Bytes `malloc` was asked for (at least 1).
    pub size: u64,
    /// Addresses the block takes: `size` rounded up to 256, and the guard gap.
    pub span: u64,
    /// Where its bytes are: an index into the machine's global regions.
    pub slot: usize,
}

/// Why `free(p)` is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadFree {
    /// `p` was returned by `malloc` and freed already.
    FreedAlready,
    /// `p` points into the live allocation at `base`, not at its start.
    Interior { base: u64 },
    /// `malloc` never returned `p` (or its block was freed and has been reused since).
    NotAllocated,
}

/// The heap's bookkeeping (module doc).
#[derive(Debug, Clone)]
pub struct Heap {
    /// Live allocations by base address.
    live: BTreeMap<u64, Block>,
    /// Quarantined (freed) blocks: base -> span.
    freed: BTreeMap<u64, u64>,
    /// The quarantined blocks' bases, oldest first.
    quarantine: VecDeque<u64>,
    /// Free ranges: start -> length, never adjacent (merged).
    free_at: BTreeMap<u64, u64>,
    /// The same free ranges as (length, start), for the smallest one that fits.
    free_by_len: BTreeSet<(u64, u64)>,
    /// Global-region slots that freed allocations left, reused by later ones.
    spare_slots: Vec<usize>,
    /// Bytes of live allocations (their `size`s).
    live_bytes: u64,
    /// Allocations made so far (names `malloc#k`).
    allocs: u64,
}

impl Default for Heap {
    fn default() -> Self {
        Heap {
            live: BTreeMap::new(),
            freed: BTreeMap::new(),
            quarantine: VecDeque::new(),
            free_at: BTreeMap::from([(HEAP_BASE, HEAP_SPAN)]),
            free_by_len: BTreeSet::from([(HEAP_SPAN, HEAP_BASE)]),
            spare_slots: Vec::new(),
            live_bytes: 0,
            allocs: 0,
        }
    }
}

/// Whether `addr` lies in the heap's address range.
pub fn in_heap(addr: u64) -> bool {
    (HEAP_BASE..HEAP_BASE + HEAP_SPAN).contains(&addr)
}

impl Heap {
    /// Allocates `size` bytes (0 counts as 1): the block's base, its slot (a spare one, else
    /// `fresh_slot`) and its number k (name `malloc#k`); None when the heap cannot hold it.
    pub fn alloc(&mut self, size: u64, fresh_slot: usize) -> Option<(u64, Block, u64)> {
        let size = size.max(1);
        if size > HEAP_BYTES - self.live_bytes {
            return None;
        }
        let span = size.div_ceil(GRANULE) * GRANULE + GRANULE;
        let start = loop {
            if let Some(&(len, start)) = self.free_by_len.range((span, 0)..).next() {
                self.take_range(start, len);
                if len > span {
                    self.add_range(start + span, len - span);
                }
                break start;
            }
            if !self.release_oldest() {
                return None;
            }
        };
        let slot = self.spare_slots.pop().unwrap_or(fresh_slot);
        let block = Block { size, span, slot };
        self.live.insert(start, block);
        self.live_bytes += size;
        self.allocs += 1;
        Some((start, block, self.allocs - 1))
    }

    /// Frees the allocation at `p` (quarantined): its block, whose slot is spare from now on.
    pub fn free(&mut self, p: u64) -> Result<Block, BadFree> {
        let Some(block) = self.live.remove(&p) else {
            if self.freed.contains_key(&p) {
                return Err(BadFree::FreedAlready);
            }
            return Err(match self.find(p) {
                Some((base, _)) => BadFree::Interior { base },
                None => BadFree::NotAllocated,
            });
        };
        self.live_bytes -= block.size;
        self.freed.insert(p, block.span);
        self.quarantine.push_back(p);
        self.spare_slots.push(block.slot);
        Ok(block)
    }

    /// The live allocation holding address `addr`: its base and block.
    pub fn find(&self, addr: u64) -> Option<(u64, Block)> {
        let (&base, &b) = self.live.range(..=addr).next_back()?;
        (addr - base < b.size).then_some((base, b))
    }

    /// The base of the freed (quarantined) allocation whose block holds `addr`.
    pub fn freed_at(&self, addr: u64) -> Option<u64> {
        let (&base, &span) = self.freed.range(..=addr).next_back()?;
        (addr - base < span).then_some(base)
    }

    /// Bytes of live allocations.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Blocks held: live and quarantined.
    pub fn blocks(&self) -> usize {
        self.live.len() + self.freed.len()
    }

    /// Returns the oldest quarantined block to the free ranges; false when none is left.
    fn release_oldest(&mut self) -> bool {
        let Some(base) = self.quarantine.pop_front() else { return false };
        let span = self.freed.remove(&base).expect("a quarantined block is in `freed`");
        let (mut start, mut len) = (base, span);
        if let Some((&s, &l)) = self.free_at.range(..base).next_back() {
            if s + l == base {
                self.take_range(s, l);
                (start, len) = (s, l + len);
            }
        }
        if let Some(&l) = self.free_at.get(&(base + span)) {
            self.take_range(base + span, l);
            len += l;
        }
        self.add_range(start, len);
        true
    }

    fn take_range(&mut self, start: u64, len: u64) {
        self.free_at.remove(&start);
        self.free_by_len.remove(&(len, start));
    }

    fn add_range(&mut self, start: u64, len: u64) {
        self.free_at.insert(start, len);
        self.free_by_len.insert((len, start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_bump_until_the_range_is_used_up() {
        let mut h = Heap::default();
        let (a, b, k) = h.alloc(10, 3).unwrap();
        assert_eq!((a, b, k), (HEAP_BASE, Block { size: 10, span: 512, slot: 3 }, 0));
        let (a2, b2, _) = h.alloc(256, 4).unwrap();
        assert_eq!((a2, b2.span), (HEAP_BASE + 512, 512));
        let (a3, _, _) = h.alloc(257, 5).unwrap();
        assert_eq!(a3, HEAP_BASE + 1024);
        // Freed blocks are quarantined: the next allocation still bumps.
        assert_eq!(h.free(a).unwrap().slot, 3);
        let (a4, b4, k4) = h.alloc(1, 6).unwrap();
        assert_eq!((a4, b4.slot, k4), (HEAP_BASE + 1024 + 768, 3, 3), "a new address, the spare slot");
        assert_eq!(h.live_bytes(), 256 + 257 + 1);
    }

    #[test]
    fn bad_frees_are_told_apart() {
        let mut h = Heap::default();
        let (a, _, _) = h.alloc(64, 0).unwrap();
        assert_eq!(h.free(a + 8), Err(BadFree::Interior { base: a }));
        assert!(h.free(a).is_ok());
        assert_eq!(h.free(a), Err(BadFree::FreedAlready));
        assert_eq!(h.free(HEAP_BASE + HEAP_SPAN), Err(BadFree::NotAllocated));
        assert_eq!(h.freed_at(a + 100), Some(a), "the guard gap belongs to the freed block");
        assert_eq!(h.find(a), None);
    }

    #[test]
    fn the_live_limit_is_cudas_heap_size() {
        let mut h = Heap::default();
        assert!(h.alloc(u64::MAX, 0).is_none(), "no overflow on a huge request");
        let (a, _, _) = h.alloc(HEAP_BYTES, 0).unwrap();
        assert!(h.alloc(1, 1).is_none(), "8 MiB live: NULL");
        h.free(a).unwrap();
        assert!(h.alloc(HEAP_BYTES, 1).is_some(), "free gives the bytes back");
    }

    #[test]
    fn quarantine_is_released_oldest_first_and_merged() {
        let mut h = Heap::default();
        // Fill the whole range with the smallest blocks (512 addresses each).
        let bases: Vec<u64> = (0..MAX_BLOCKS).map(|k| h.alloc(1, k as usize).map(|(a, ..)| a).unwrap_or_else(|| panic!("block {k}"))).collect();
        assert!(h.alloc(1, 0).is_none(), "the range is full: NULL");
        for &b in &bases[..4] {
            h.free(b).unwrap();
        }
        // A block of 1024 addresses (768 bytes and the guard) needs the two oldest freed
        // blocks, merged.
        let (a, _, _) = h.alloc(768, 0).unwrap();
        assert_eq!(a, bases[0]);
        assert_eq!(h.freed_at(bases[2]), Some(bases[2]), "younger ones stay quarantined");
        assert_eq!(h.blocks() as u64, MAX_BLOCKS - 4 + 1 + 2);
        // The next small one takes the third (released after the merged pair), not the fourth.
        let (a, _, _) = h.alloc(1, 0).unwrap();
        assert_eq!(a, bases[2]);
    }

    #[test]
    fn a_malloc_free_loop_runs_forever_in_bounded_memory() {
        let mut h = Heap::default();
        for k in 0..1_000_000u64 {
            let (a, b, _) = h.alloc(1 + k % 3000, 0).expect("a freed heap always has room");
            assert_eq!(b.slot, 0);
            h.free(a).unwrap();
            assert!(h.blocks() as u64 <= MAX_BLOCKS);
        }
        assert!(h.free_at.len() + h.quarantine.len() <= MAX_BLOCKS as usize);
    }
}
