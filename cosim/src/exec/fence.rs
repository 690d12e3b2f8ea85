//! Memory fences (PTX 9.7.13.4). The golden model executes each warp-instruction atomically in a
//! single global order, so fences add no ordering here; they are retired (and logged) like any
//! instruction. The proxy fences and `fence.mbarrier_init` feed the TMA engine's findings
//! (exec/tma.rs `on_fence`).

use super::{lanes, Cx, Exec, Flow, R};
use hopsync_firmware::ir::{Instr, Mod};
use hopsync_firmware::ops::op;

/// `membar.proxy.async` is `fence.proxy.async` (PTX 9.7.13.4: "membar.proxy is a synonym for
/// fence.proxy"); `membar.gl`/`.sys` are `fence.sc` of gpu/sys scope.
impl Exec for op::Membar {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        super::tma::on_fence(cx, i);
        if !i.has(Mod::Proxy) {
            crate::race::memory_fence(cx.m, cx.cta, cx.warp, true, true);
        }
        Ok(Flow::Next)
    }
}

/// The proxy fences feed the TMA engine's proxy and mbarrier-init checks (exec/tma.rs).
impl Exec for op::Fence {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        super::tma::on_fence(cx, i);
        // A memory fence (not a proxy fence, not fence.mbarrier_init): sem .sc/.acq_rel (the
        // default), .acquire or .release (PTX 9.7.13.4).
        if !i.has(Mod::Proxy) && !i.has(Mod::MbarrierInit) {
            crate::race::memory_fence(cx.m, cx.cta, cx.warp, !i.has(Mod::Acquire), !i.has(Mod::Release));
        }
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
            // The destination is global, the source shared::cta (the only spaces of the form).
            let src = cx.place_in(i, 1, l, size, Some(Mod::SharedCta))?;
            let dst = cx.place_in(i, 0, l, size, Some(Mod::Global))?;
            let data = cx.m.read(src, size).to_vec();
            cx.m.write(dst, &data);
        }
        Ok(Flow::Next)
    }
}
