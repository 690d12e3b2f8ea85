//! Control flow (PTX 9.7.12): branches, exit, nanosleep; trap and brkpt (PTX 9.7.19). `call` and
//! `ret` are in call.rs.

use super::{Cx, Exec, Flow, R};
use crate::finding::FindingKind;
use hopsync_firmware::ir::{Instr, Operand};
use hopsync_firmware::ops::op;

impl Exec for op::Bra {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        match &i.operands[0] {
            Operand::Label(l) => Ok(Flow::Jump(cx.m.module().kernel.label_pc[l.0 as usize])),
            _ => super::unsupported(cx, i, "indirect branches"),
        }
    }
}

impl Exec for op::Exit {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Exit)
    }
}

/// trap (PTX 9.7.19.3): "abort execution and generate an interrupt to the host CPU": the kernel
/// fails. With `--ub warn` the finding is recorded and the trapping threads end.
impl Exec for op::Trap {
    fn exec(cx: &mut Cx<'_, '_>, _: &Instr) -> R {
        let l = cx.first_lane();
        cx.finding(FindingKind::Trap, l, format!("`trap` executed by lanes {:#010x}: the kernel aborts", cx.mask))?;
        Ok(Flow::Exit)
    }
}

/// brkpt (PTX 9.7.19.1): "suspends execution" for a debugger; without one the launch fails.
/// With `--ub warn` the threads go on.
impl Exec for op::Brkpt {
    fn exec(cx: &mut Cx<'_, '_>, _: &Instr) -> R {
        let l = cx.first_lane();
        cx.finding(FindingKind::Breakpoint, l, "`brkpt` executed with no debugger attached: the kernel stops".into())?;
        Ok(Flow::Next)
    }
}

/// nanosleep suspends for a bounded time (PTX 9.7.12.3); the golden model has no time, so it is
/// a scheduling point only.
impl Exec for op::Nanosleep {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}
