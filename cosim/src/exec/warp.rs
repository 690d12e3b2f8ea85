//! Warp and cluster instructions: mapa, elect.sync, activemask, vote.sync, match.sync, redux.sync,
//! bar.warp.sync, griddepcontrol (PTX 9.7.9.x, 9.7.13.2, 9.7.13.8 - 9.7.13.14).

use super::{bits, lanes, sext, trunc, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{SHARED_GENERIC_BASE, SMEM_CLUSTER_STRIDE};
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

/// The `.sync` rule shared by these instructions, per lane: every executing thread is in its own
/// membermask, and every live thread its membermask names executes the instruction with it, with
/// the same membermask (PTX 9.7.13.9: "the behavior is undefined if the executing thread is not in
/// membermask"; 9.7.9 shfl.sync: the executing thread waits "until all non-exited threads
/// corresponding to membermask have executed shfl.sync with the same qualifiers and same
/// membermask value"). So lanes may name different, disjoint sets, as the tiles of
/// `cooperative_groups::tiled_partition<8>` do: each set is one group. Returns the groups
/// (membermask, its executing lanes).
fn membermask_groups(cx: &mut Cx<'_, '_>, i: &Instr, k: usize) -> Result<Vec<(u32, u32)>, Stop> {
    let mut groups: Vec<(u32, u32)> = Vec::new();
    for l in lanes(cx.mask) {
        let mm = cx.src(i, k, l) as u32;
        match groups.iter_mut().find(|(m, _)| *m == mm) {
            Some((_, g)) => *g |= 1 << l,
            None => groups.push((mm, 1 << l)),
        }
    }
    let live = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].live();
    for &(mm, g) in &groups {
        if g & !mm != 0 {
            let l = (g & !mm).trailing_zeros();
            cx.finding(FindingKind::WarpSyncMaskMismatch, l, format!("lane {l} executes `{}` but is not in membermask {mm:#010x}", cx.text(i)))?;
        }
        let lane0 = g.trailing_zeros();
        if let Some(&(other, og)) = groups.iter().find(|(m, og)| *m != mm && og & mm != 0) {
            let l = (og & mm).trailing_zeros();
            cx.finding(FindingKind::WarpSyncMaskMismatch, l, format!("lanes disagree on membermask: lane {lane0} has {mm:#010x}, lane {l} has {other:#010x}"))?;
        }
        let missing = mm & live & !cx.mask;
        if missing != 0 {
            cx.finding(
                FindingKind::WarpSyncMaskMismatch,
                lane0,
                format!("membermask {mm:#010x} names lanes {missing:#010x} that are live but not executing `{}` with the others (executing {:#010x})", cx.text(i), cx.mask),
            )?;
        }
    }
    Ok(groups)
}

/// Runs `body` once per membermask group ([`membermask_groups`]) with `cx.mask` set to the
/// group's executing lanes; `body` gets the lanes of its membermask that execute.
fn by_membermask(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, body: impl Fn(&mut Cx<'_, '_>, u32) -> R) -> R {
    let all = cx.mask;
    for (mm, g) in membermask_groups(cx, i, k)? {
        cx.mask = g;
        let r = body(cx, mm & g);
        cx.mask = all;
        r?;
    }
    Ok(Flow::Next)
}

/// mapa (PTX 9.7.9.x "mapa"): the address of the same variable in CTA `rank` of the cluster.
impl Exec for op::Mapa {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let n: u32 = cx.m.prog.manifest.cluster_size();
        let w = bits(cx.ty(i));
        let generic = !i.has(Mod::SharedCluster);
        for l in lanes(cx.mask) {
            let a = cx.src(i, 1, l);
            let rank = cx.src(i, 2, l) as u32;
            if rank >= n {
                cx.finding(FindingKind::ClusterRankOutOfRange, l, format!("mapa to CTA rank {rank}, but the cluster has {n} CTAs"))?;
                continue;
            }
            let local = if generic { a.wrapping_sub(SHARED_GENERIC_BASE) } else { a };
            let v = SMEM_CLUSTER_STRIDE * (rank as u64 + 1) + (local % SMEM_CLUSTER_STRIDE);
            cx.dst(i, 0, l, trunc(if generic { v + SHARED_GENERIC_BASE } else { v }, w));
        }
        Ok(Flow::Next)
    }
}

/// getctarank (PTX 9.7.9 "getctarank"): the rank of the CTA whose shared memory a
/// `.shared::cluster` (or generic) address names.
impl Exec for op::Getctarank {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let n: u32 = cx.m.prog.manifest.cluster_size();
        let generic = !i.has(Mod::SharedCluster);
        let own = cx.m.ctas[cx.cta as usize].rank;
        for l in lanes(cx.mask) {
            let a = cx.src(i, 1, l);
            let off = if generic { a.wrapping_sub(SHARED_GENERIC_BASE) } else { a };
            let rank = if off < SMEM_CLUSTER_STRIDE { own as u64 } else { off / SMEM_CLUSTER_STRIDE - 1 };
            if off >> 32 != 0 || rank >= n as u64 {
                cx.finding(FindingKind::ClusterRankOutOfRange, l, format!("getctarank of 0x{a:x}: not a shared::cluster address of this {n}-CTA cluster"))?;
                continue;
            }
            cx.dst(i, 0, l, rank);
        }
        Ok(Flow::Next)
    }
}

/// elect.sync (PTX 9.7.13.14): the lowest executing lane in membermask is the leader.
impl Exec for op::Elect {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        by_membermask(cx, i, 1, |cx, set| {
            let leader = set.trailing_zeros();
            for l in lanes(cx.mask) {
                if let Operand::Pair(d, p) = &i.operands[0] {
                    if d.0 != u32::MAX {
                        cx.set_reg(*d, l, leader as u64);
                    }
                    cx.set_reg(*p, l, (l == leader) as u64);
                } else {
                    cx.dst(i, 0, l, (l == leader) as u64);
                }
            }
            Ok(Flow::Next)
        })
    }
}

/// activemask (PTX 9.7.13.11): the threads of the warp executing this instruction together.
impl Exec for op::Activemask {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let g = cx.group as u64;
        for l in lanes(cx.mask) {
            cx.dst(i, 0, l, g);
        }
        Ok(Flow::Next)
    }
}

/// vote.sync (PTX 9.7.13.9).
impl Exec for op::Vote {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        by_membermask(cx, i, 2, |cx, set| {
            let ballot = lanes(set).filter(|&l| cx.src(i, 1, l) & 1 == 1).fold(0u32, |m, l| m | 1 << l);
            let v = if i.has(Mod::Ballot) {
                ballot as u64
            } else if i.has(Mod::All) {
                (ballot == set) as u64
            } else if i.has(Mod::Any) {
                (ballot != 0) as u64
            } else {
                (ballot == set || ballot == 0) as u64
            };
            for l in lanes(cx.mask) {
                cx.dst(i, 0, l, v);
            }
            Ok(Flow::Next)
        })
    }
}

/// match.sync (PTX 9.7.13.10).
impl Exec for op::Match {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        by_membermask(cx, i, 2, |cx, set| {
            let w = bits(cx.ty(i));
            let vals: Vec<(u32, u64)> = lanes(set).map(|l| (l, trunc(cx.src(i, 1, l), w))).collect();
            let all_same = vals.windows(2).all(|p| p[0].1 == p[1].1);
            for l in lanes(cx.mask) {
                let mine = trunc(cx.src(i, 1, l), w);
                let (d, p) = if i.has(Mod::Any) {
                    (vals.iter().filter(|(_, v)| *v == mine).fold(0u32, |m, (k, _)| m | 1 << k), None)
                } else {
                    (if all_same { set } else { 0 }, Some(all_same))
                };
                match &i.operands[0] {
                    Operand::Pair(dr, pr) => {
                        if dr.0 != u32::MAX {
                            cx.set_reg(*dr, l, d as u64);
                        }
                        cx.set_reg(*pr, l, p.unwrap_or(false) as u64);
                    }
                    _ => cx.dst(i, 0, l, d as u64),
                }
            }
            Ok(Flow::Next)
        })
    }
}

/// redux.sync (PTX 9.7.13.12).
impl Exec for op::Redux {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        if t == Mod::F32 {
            return super::unsupported(cx, i, "redux.sync on .f32 (sm_100a)");
        }
        by_membermask(cx, i, 2, |cx, set| {
            let vals: Vec<u64> = lanes(set).map(|l| trunc(cx.src(i, 1, l), 32)).collect();
            let signed = t == Mod::S32;
            let v = if i.has(Mod::Add) {
                vals.iter().fold(0u64, |a, b| a.wrapping_add(*b))
            } else if i.has(Mod::Min) {
                if signed { vals.iter().map(|v| sext(*v, 32)).min().unwrap_or(0) as u64 } else { vals.iter().copied().min().unwrap_or(0) }
            } else if i.has(Mod::Max) {
                if signed { vals.iter().map(|v| sext(*v, 32)).max().unwrap_or(0) as u64 } else { vals.iter().copied().max().unwrap_or(0) }
            } else if i.has(Mod::And) {
                vals.iter().fold(u32::MAX as u64, |a, b| a & b)
            } else if i.has(Mod::Or) {
                vals.iter().fold(0, |a, b| a | b)
            } else {
                vals.iter().fold(0, |a, b| a ^ b)
            };
            for l in lanes(cx.mask) {
                cx.dst(i, 0, l, trunc(v, 32));
            }
            Ok(Flow::Next)
        })
    }
}

/// The source lane of `shfl.sync` for `lane` (PTX 9.7.9 "shfl.sync"): `b` is the lane or offset, `c`
/// packs the clamp (`c[4:0]`) and the segment mask (`c[12:8]`). Returns the lane and whether it
/// is in range (otherwise the lane reads its own value and the predicate is false).
pub fn shfl_source(mode: Mod, lane: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, cval, seg) = (b & 31, c & 31, (c >> 8) & 31);
    let max_lane = (lane & seg) | (cval & !seg);
    let min_lane = lane & seg;
    let (j, ok) = match mode {
        Mod::Up => {
            let j = lane as i64 - bval as i64;
            (j, j >= max_lane as i64)
        }
        Mod::Down => {
            let j = (lane + bval) as i64;
            (j, j <= max_lane as i64)
        }
        Mod::Bfly => {
            let j = (lane ^ bval) as i64;
            (j, j <= max_lane as i64)
        }
        _ => {
            let j = (min_lane | (bval & !seg)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    if ok {
        (j as u32, true)
    } else {
        (lane, false)
    }
}

/// shfl.sync (PTX 9.7.9 "shfl.sync"): each lane copies `a` from the lane [`shfl_source`] names; reading a
/// lane that does not execute the instruction is undefined (`ShflSourceInactive`; under `--ub
/// warn` the lane keeps its own value).
impl Exec for op::ShflSync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        by_membermask(cx, i, 4, |cx, mm| {
            let mode = [Mod::Up, Mod::Down, Mod::Bfly, Mod::Idx].into_iter().find(|m| i.has(*m)).expect("shfl.sync has a mode");
            let vals: Vec<u64> = (0..32).map(|l| if cx.mask >> l & 1 == 1 { trunc(cx.src(i, 1, l), 32) } else { 0 }).collect();
            let mut out = Vec::new();
            for l in lanes(cx.mask) {
                let (j, ok) = shfl_source(mode, l, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as u32);
                let v = if mm >> j & 1 == 1 {
                    vals[j as usize]
                } else {
                    cx.finding(
                        FindingKind::ShflSourceInactive,
                        l,
                        format!("lane {l} reads lane {j}, which does not execute this shfl.sync (executing {:#010x}, membermask {mm:#010x}): the value is undefined", cx.mask),
                    )?;
                    vals[l as usize]
                };
                out.push((l, v, ok));
            }
            for (l, v, ok) in out {
                match &i.operands[0] {
                    Operand::Pair(d, p) => {
                        if d.0 != u32::MAX {
                            cx.set_reg(*d, l, v);
                        }
                        cx.set_reg(*p, l, ok as u64);
                    }
                    _ => cx.dst(i, 0, l, v),
                }
            }
            Ok(Flow::Next)
        })
    }
}

/// bar.warp.sync (PTX 9.7.13.2): the named lanes meet here. With min-pc scheduling they already
/// execute together; a lane named but elsewhere is the mismatch finding.
impl Exec for op::BarWarpSync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        by_membermask(cx, i, 0, |_, _| Ok(Flow::Next))
    }
}

/// griddepcontrol (PTX 9.7.13.13): hopsync launches one grid with no dependent grid, so
/// `launch_dependents` has nothing to launch and `wait` has no prerequisite grid to wait for.
impl Exec for op::Griddepcontrol {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}

#[cfg(test)]
mod tests {
    use super::shfl_source;
    use hopsync_firmware::ir::Mod;

    #[test]
    fn shfl_source_lanes() {
        // __shfl_down_sync(m, v, 2): c = 0x1f. Lane 29 reads 31; lane 30 is out of range.
        assert_eq!(shfl_source(Mod::Down, 29, 2, 0x1f), (31, true));
        assert_eq!(shfl_source(Mod::Down, 30, 2, 0x1f), (30, false));
        // __shfl_up_sync(m, v, 1): c = 0. Lane 0 keeps its own.
        assert_eq!(shfl_source(Mod::Up, 5, 1, 0), (4, true));
        assert_eq!(shfl_source(Mod::Up, 0, 1, 0), (0, false));
        // __shfl_xor_sync(m, v, 4, 16): width 16 gives c = ((32 - 16) << 8) | 0x1f = 0x101f.
        assert_eq!(shfl_source(Mod::Bfly, 3, 4, 0x101f), (7, true));
        assert_eq!(shfl_source(Mod::Bfly, 17, 4, 0x101f), (21, true));
        // __shfl_sync(m, v, 3, 8): c = 0x181f: each 8-lane segment reads its lane 3.
        assert_eq!(shfl_source(Mod::Idx, 13, 3, 0x181f), (11, true));
        assert_eq!(shfl_source(Mod::Idx, 2, 3, 0x181f), (3, true));
        // __shfl_sync(m, v, 35): lane index wraps to 3.
        assert_eq!(shfl_source(Mod::Idx, 9, 35, 0x1f), (3, true));
        // Up within 16-lane segments (c = 0x1000): lane 16 is a segment's first lane.
        assert_eq!(shfl_source(Mod::Up, 16, 1, 0x1000), (16, false));
        assert_eq!(shfl_source(Mod::Up, 17, 1, 0x1000), (16, true));
        // Down within 8-lane segments (c = 0x181f): lane 7 is the first segment's last.
        assert_eq!(shfl_source(Mod::Down, 7, 1, 0x181f), (7, false));
        assert_eq!(shfl_source(Mod::Down, 6, 1, 0x181f), (7, true));
    }
}
