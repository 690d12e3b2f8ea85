//! Memory fences (PTX 9.7.13.4). The golden model executes each warp-instruction atomically in a
//! single global order, so fences add no ordering here; they are retired (and logged) like any
//! instruction. The proxy-fence findings of the TMA issue hook in here.

use super::{lanes, Cx, Exec, Flow, R};
use hopsync_firmware::ir::Instr;
use hopsync_firmware::ops::op;

impl Exec for op::Membar {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}

impl Exec for op::Fence {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}

/// tensormap.cp_fenceproxy (PTX 9.7.13.16): copies a 128-byte tensor map from shared to global
/// memory and fences the tensormap proxy.
impl Exec for op::TensormapCpFenceproxy {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let size = cx.src(i, 2, l) as usize;
            if size != 128 {
                return super::unsupported(cx, i, "tensormap.cp_fenceproxy with a size other than 128");
            }
            let src = cx.place(i, 1, l, size)?;
            let dst = cx.place(i, 0, l, size)?;
            let data = cx.m.read(src, size).to_vec();
            cx.m.write(dst, &data);
        }
        Ok(Flow::Next)
    }
}
