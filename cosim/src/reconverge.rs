//! Where the lanes of a warp that split at a branch meet again: the branch's immediate
//! post-dominator in the kernel's control-flow graph, and the convergence barriers that hold the
//! lanes arriving there first.
//!
//! PTX lets the threads of a warp diverge at a conditional branch (PTX 9.7.12.1: `bra` without
//! `.uni` may be divergent) and requires `.aligned` instructions (`bar.sync`, PTX 9.7.13.1;
//! `barrier.cluster`, 9.7.13.3) to be executed by all threads of the warp as the same
//! instruction. For `if (tid < 4) { ...; cp.async.wait_group 0; } __syncthreads();` nvcc puts the
//! `bar.sync` at the join point of the `if`, which every thread executes; ptxas makes the warp
//! reconverge there (on sm_70+ a convergence barrier, `BSSY` at the branch and `BSYNC` at the
//! join, which waits for every non-exited thread that took part in the branch). The golden model
//! does the same: a divergent branch pushes a [`ConvBarrier`] for its join, and a lane that
//! reaches the join waits there until every non-exited lane of the barrier has arrived, so the
//! lanes that stopped in `wait_group` meet the others before the barrier, instead of the others
//! executing it without them.
//!
//! The join of a branch is its immediate post-dominator (every path from the branch to the
//! kernel's end passes it); `exit`/`ret` lead to the end. A branch whose paths meet only at the
//! end has no join (its lanes reconverge by exiting). A join that is itself an unguarded
//! `exit`/`ret` holds no lane: exiting lanes leave the convergence barrier, as exited threads do.

use hopsync_firmware::ir::{Kernel, Opcode, Operand};
use petgraph::algo::dominators;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Reversed;

/// A convergence barrier: lanes that split at a branch and meet again at its join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvBarrier {
    /// The join: the instruction index where the lanes meet.
    pub join: u32,
    /// The lanes that took part in the branch (both sides).
    pub mask: u32,
    /// The instruction index of the divergent branch, for messages.
    pub branch: u32,
}

/// Per instruction index: the join of a conditional branch there (None: not a branch, or no join
/// before the kernel's end, or a join where lanes exit and so are not held).
pub fn joins(kernel: &Kernel) -> Vec<Option<u32>> {
    let n = kernel.body.len();
    if !kernel.body.iter().any(|i| i.guard.is_some() && branch_target(kernel, i).is_some()) {
        return vec![None; n];
    }
    // Nodes 0..n are instructions; node n is the kernel's end (falling off the body, exit, ret).
    let mut g = DiGraph::<(), ()>::with_capacity(n + 1, 2 * n);
    let nodes: Vec<NodeIndex> = (0..=n).map(|_| g.add_node(())).collect();
    for pc in 0..n {
        for s in successors(kernel, pc) {
            g.add_edge(nodes[pc], nodes[s.min(n)], ());
        }
    }
    let post = dominators::simple_fast(Reversed(&g), nodes[n]);
    (0..n)
        .map(|pc| {
            let i = &kernel.body[pc];
            if i.guard.is_none() || branch_target(kernel, i).is_none() {
                return None;
            }
            let j = post.immediate_dominator(nodes[pc])?.index();
            (j < n && !is_exit(kernel, j)).then_some(j as u32)
        })
        .collect()
}

/// The instruction indices control may go to after the instruction at `pc` (index `body.len()`:
/// the kernel's end).
fn successors(kernel: &Kernel, pc: usize) -> Vec<usize> {
    let i = &kernel.body[pc];
    let end = kernel.body.len();
    let guarded = i.guard.is_some();
    if matches!(i.op, Opcode::Exit | Opcode::Ret) {
        return if guarded { vec![pc + 1, end] } else { vec![end] };
    }
    match branch_target(kernel, i) {
        Some(t) if guarded => vec![t, pc + 1],
        Some(t) => vec![t],
        None => vec![pc + 1],
    }
}

/// The target of a branch: the instruction index its label operand names (PTX 9.7.12.1: the
/// branch target must be a label), None for an instruction without one.
fn branch_target(kernel: &Kernel, i: &hopsync_firmware::ir::Instr) -> Option<usize> {
    i.operands.iter().find_map(|o| match o {
        Operand::Label(l) => Some(kernel.label_pc[l.0 as usize] as usize),
        _ => None,
    })
}

/// Whether the instruction at `pc` is an unguarded `exit`/`ret`.
fn is_exit(kernel: &Kernel, pc: usize) -> bool {
    let i = &kernel.body[pc];
    i.guard.is_none() && matches!(i.op, Opcode::Exit | Opcode::Ret)
}

/// The lanes that wait at a join: every lane at the join of a barrier it belongs to, while some
/// live lane of that barrier has not arrived (is elsewhere, or blocked). `pc`, `ready`: each
/// lane's pc and whether it is ready; `live`: lanes not exited.
pub fn held(conv: &[ConvBarrier], pc: &[u32; 32], ready: u32, live: u32) -> u32 {
    let mut held = 0;
    for b in conv {
        let members = b.mask & live;
        let at_join = (0..32).filter(|&l| members >> l & 1 == 1 && pc[l] == b.join).fold(0u32, |m, l| m | 1 << l);
        let arrived = at_join & ready;
        if arrived != members {
            held |= arrived;
        }
    }
    held
}

/// The convergence barriers after the lanes of `group` executed the instruction at `pc`
/// (`live`: lanes not exited now): a barrier whose join the whole of it executed is complete, and
/// one whose lanes all exited is gone.
pub fn retire(conv: &mut Vec<ConvBarrier>, pc: u32, group: u32, live: u32) {
    conv.retain(|b| b.mask & live != 0 && !(b.join == pc && b.mask & live & !group == 0));
}

/// Records a branch at `pc` by the lanes of `group` that split (`taken` went to the target, the
/// rest fell through): a convergence barrier for its join, unless one already waits there for
/// all of these lanes (a loop whose lanes leave it one iteration at a time).
pub fn diverge(conv: &mut Vec<ConvBarrier>, join: Option<u32>, pc: u32, group: u32, taken: u32) {
    let Some(join) = join else { return };
    if taken == 0 || taken == group {
        return;
    }
    if conv.iter().any(|b| b.join == join && b.mask & group == group) {
        return;
    }
    conv.push(ConvBarrier { join, mask: group, branch: pc });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(body: &str) -> Kernel {
        let src = format!(
            "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [32, 1, 1]\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n{body}\n}}\n"
        );
        hopsync_firmware::Program::parse("t.ptx", &src).expect("parses").module.kernel
    }

    #[test]
    fn if_without_else_joins_after_its_body() {
        // The reduced program: the join of `@%p1 bra` is `bar.sync` (pc 5).
        let k = kernel("\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 4;\n\t@%p1 bra A;\n\tbra.uni B;\nA:\n\tadd.u32 %r2, %r1, 1;\nB:\n\tbar.sync 0;\n\tret;");
        assert_eq!(joins(&k), vec![None, None, Some(5), None, None, None, None]);
    }

    #[test]
    fn if_else_joins_after_both_sides_and_loops_at_their_exit() {
        let k = kernel(
            "\t@%p1 bra E;\n\tadd.u32 %r1, %r1, 1;\n\tbra.uni J;\nE:\n\tadd.u32 %r1, %r1, 2;\nJ:\n\tadd.u32 %r2, %r2, 1;\nL:\n\tadd.u32 %r2, %r2, 1;\n\t@%p2 bra L;\n\tadd.u32 %r3, %r2, 1;\n\tret;",
        );
        assert_eq!(joins(&k), vec![Some(4), None, None, None, None, None, Some(7), None, None]);
    }

    #[test]
    fn paths_meeting_only_at_exit_have_no_join() {
        // Two returns, and a join that is `ret`: neither holds a lane.
        let k = kernel("\t@%p1 bra E;\n\tret;\nE:\n\tret;");
        assert_eq!(joins(&k), vec![None, None, None]);
        let k = kernel("\t@%p1 bra E;\n\tadd.u32 %r1, %r1, 1;\nE:\n\tret;");
        assert_eq!(joins(&k), vec![None, None, None]);
    }

    #[test]
    fn lanes_wait_at_the_join_until_every_live_lane_of_the_branch_arrives() {
        let b = ConvBarrier { join: 9, mask: 0b1111, branch: 2 };
        let mut pc = [9u32; 32];
        pc[0] = 5;
        // Lane 0 elsewhere: lanes 1-3 wait.
        assert_eq!(held(&[b], &pc, 0b1111, 0b1111), 0b1110);
        // Lane 0 at the join but blocked (in the instruction before it): still waiting.
        pc[0] = 9;
        assert_eq!(held(&[b], &pc, 0b1110, 0b1111), 0b1110);
        // Lane 0 ready there, or exited: nobody waits.
        assert_eq!(held(&[b], &pc, 0b1111, 0b1111), 0);
        assert_eq!(held(&[b], &pc, 0b1110, 0b1110), 0);
    }

    #[test]
    fn barriers_complete_at_their_join_and_loops_push_one() {
        let mut conv = Vec::new();
        diverge(&mut conv, Some(9), 2, 0b1111, 0b0011);
        diverge(&mut conv, Some(9), 2, 0b0011, 0b0001);
        diverge(&mut conv, Some(7), 4, 0b0011, 0b0011);
        assert_eq!(conv, vec![ConvBarrier { join: 9, mask: 0b1111, branch: 2 }]);
        retire(&mut conv, 9, 0b0111, 0b1111);
        assert_eq!(conv.len(), 1, "lane 3 did not execute the join");
        retire(&mut conv, 9, 0b0111, 0b0111);
        assert!(conv.is_empty());
    }
}
