//! TMA instructions (PTX 9.7.9.25.4 - 9.7.9.27). They parse and print; their semantics come with
//! the TMA issue, until then executing one stops the run with "unsupported: ...".

use super::{unsupported, Cx, Exec, R};
use hopsync_firmware::ir::Instr;
use hopsync_firmware::ops::op;

/// Whether the golden model gives `op` semantics (false: it stops with "unsupported: ...": the
/// TMA instructions until the TMA issue, and the carry-chain `addc`/`subc`).
pub fn modelled(op: hopsync_firmware::Opcode) -> bool {
    use hopsync_firmware::Opcode::*;
    !matches!(
        op,
        Addc
            | Subc
            | CpAsyncBulk
            | CpAsyncBulkTensor
            | CpReduceAsyncBulk
            | CpReduceAsyncBulkTensor
            | CpAsyncBulkPrefetch
            | CpAsyncBulkPrefetchTensor
            | CpAsyncBulkCommitGroup
            | CpAsyncBulkWaitGroup
            | ClusterlaunchcontrolTryCancel
            | ClusterlaunchcontrolQueryCancel
    )
}

macro_rules! not_yet {
    ($($t:ident),*) => {$(
        impl Exec for op::$t {
            fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
                unsupported(cx, i, i.op.name())
            }
        }
    )*};
}

not_yet!(
    CpAsyncBulk,
    CpAsyncBulkTensor,
    CpReduceAsyncBulk,
    CpReduceAsyncBulkTensor,
    CpAsyncBulkPrefetch,
    CpAsyncBulkPrefetchTensor,
    CpAsyncBulkCommitGroup,
    CpAsyncBulkWaitGroup
);

// sm_100 instructions are rejected by the parser's target check ("requires sm_100"); a module
// that reached execution with one is an internal inconsistency, reported the same way.
not_yet!(ClusterlaunchcontrolTryCancel, ClusterlaunchcontrolQueryCancel);
