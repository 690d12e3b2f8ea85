//! MbarArbiter: stage 0 of the mbarrier unit: a round-robin arbiter over the three request
//! ports (local warps, the TMA engine, the cluster / async-store path).
//!
//! # Ports
//!
//! - `local_*`, `tma_*`, `cluster_*` (`req` / `valid` in, `ready` out): the unit's request
//!   ports; `ready` is combinational (the port wins this cycle).
//! - `acc_valid` / `acc_req` / `acc_src` / `acc_word`: the operation accepted this cycle (it
//!   enters stage 1 at this edge) and its port; `acc_word` is presented to the bank's read
//!   port.
//!
//! # Behaviour
//!
//! `rr` names the port with the highest priority this cycle; a grant moves it to the next port
//! in the order local, TMA, cluster, so none of the three starves.

use super::{MbarrierReq, MbarrierSource};
use rust_hdl::prelude::*;

/// The round-robin arbiter.
#[derive(LogicBlock, Default)]
pub struct MbarArbiter {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// request from this CTA's warps
    pub local_req: Signal<In, MbarrierReq>,
    /// `local_req` is valid
    pub local_valid: Signal<In, bool>,
    /// `local_req` is accepted this cycle
    pub local_ready: Signal<Out, bool>,
    /// request from the TMA engine
    pub tma_req: Signal<In, MbarrierReq>,
    /// `tma_req` is valid
    pub tma_valid: Signal<In, bool>,
    /// `tma_req` is accepted this cycle
    pub tma_ready: Signal<Out, bool>,
    /// request from other CTAs of the cluster / async stores
    pub cluster_req: Signal<In, MbarrierReq>,
    /// `cluster_req` is valid
    pub cluster_valid: Signal<In, bool>,
    /// `cluster_req` is accepted this cycle
    pub cluster_ready: Signal<Out, bool>,
    /// an operation is accepted this cycle
    pub acc_valid: Signal<Out, bool>,
    /// the accepted request
    pub acc_req: Signal<Out, MbarrierReq>,
    /// its port
    pub acc_src: Signal<Out, MbarrierSource>,
    /// its word index
    pub acc_word: Signal<Out, Bits<16>>,

    /// the port with the highest arbitration priority this cycle
    rr: DFF<MbarrierSource>,
    /// the local port wins
    grant_local: Signal<Local, bool>,
    /// the TMA port wins
    grant_tma: Signal<Local, bool>,
    /// the cluster port wins
    grant_cluster: Signal<Local, bool>,
}

impl Logic for MbarArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rr);
        self.grant_local.next = false;
        self.grant_tma.next = false;
        self.grant_cluster.next = false;
        match self.rr.q.val() {
            MbarrierSource::Local => {
                if self.local_valid.val() {
                    self.grant_local.next = true;
                } else if self.tma_valid.val() {
                    self.grant_tma.next = true;
                } else if self.cluster_valid.val() {
                    self.grant_cluster.next = true;
                }
            }
            MbarrierSource::Tma => {
                if self.tma_valid.val() {
                    self.grant_tma.next = true;
                } else if self.cluster_valid.val() {
                    self.grant_cluster.next = true;
                } else if self.local_valid.val() {
                    self.grant_local.next = true;
                }
            }
            _ => {
                if self.cluster_valid.val() {
                    self.grant_cluster.next = true;
                } else if self.local_valid.val() {
                    self.grant_local.next = true;
                } else if self.tma_valid.val() {
                    self.grant_tma.next = true;
                }
            }
        }
        self.local_ready.next = self.grant_local.val();
        self.tma_ready.next = self.grant_tma.val();
        self.cluster_ready.next = self.grant_cluster.val();
        self.acc_valid.next =
            self.local_valid.val() || self.tma_valid.val() || self.cluster_valid.val();
        self.acc_req.next = self.local_req.val();
        self.acc_src.next = MbarrierSource::Local;
        self.acc_word.next = self.local_req.val().word;
        if self.grant_local.val() {
            self.rr.d.next = MbarrierSource::Tma;
        }
        if self.grant_tma.val() {
            self.acc_req.next = self.tma_req.val();
            self.acc_src.next = MbarrierSource::Tma;
            self.acc_word.next = self.tma_req.val().word;
            self.rr.d.next = MbarrierSource::Cluster;
        }
        if self.grant_cluster.val() {
            self.acc_req.next = self.cluster_req.val();
            self.acc_src.next = MbarrierSource::Cluster;
            self.acc_word.next = self.cluster_req.val().word;
            self.rr.d.next = MbarrierSource::Local;
        }
    }
}
