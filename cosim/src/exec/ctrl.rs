//! Control flow (PTX 9.7.12): branches, exit, nanosleep.

use super::{Cx, Exec, Flow, R};
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

/// `ret` from the entry kernel ends the thread, like `exit`.
impl Exec for op::Ret {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Exit)
    }
}

/// nanosleep suspends for a bounded time (PTX 9.7.12.3); the golden model has no time, so it is
/// a scheduling point only.
impl Exec for op::Nanosleep {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}
