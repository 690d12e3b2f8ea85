//! `hopsync calibrate fit` (issue 13 §4): sm90.toml's timing keys searched against the **fit set**
//! only (the validation set is never run here), and each key's provenance: the fit-set figure that
//! moves most when the key moves, written into sm90.toml beside the value ([`apply_fit`]).
//!
//! The search is a deterministic coordinate descent on (max, mean) |relative error|. Running every
//! fit-set program for every candidate value would take hours, so each key first gets two probes
//! (half and double its value): the programs whose figures do not move under either probe are
//! taken as independent of the key and keep their cached figures while its candidates are scored.
//! A key that only matters past a threshold neither probe crosses (a queue depth, say) is missed
//! by this; the probes' figures also give the key's provenance.

use super::{rows_of, error_stats, set_of, FigureSamples, Set, Workload};
use crate::SmConfig;

/// A fitted parameter: its TOML `section.key` and the range searched.
#[derive(Debug, Clone, Copy)]
pub struct FitParam {
    /// `section.key` in sm90.toml.
    pub key: &'static str,
    /// Smallest value tried.
    pub min: f64,
    /// Largest value tried.
    pub max: f64,
}

const fn fp(key: &'static str, min: f64, max: f64) -> FitParam {
    FitParam { key, min, max }
}

/// The parameters `hopsync calibrate fit` searches, in search order: every timing key of
/// sm90.toml that a calibration figure can measure. Not fitted: physical facts (clock, schedulers,
/// banks, sector size), the TMA engine's structure (`tma.decode_cycles`, `smem_bytes_per_cycle`,
/// `read_tags`: sizes of the RTL unit, the lead's model work), modelling limits (`[run]`,
/// `sync.nanosleep_max_ns`), and `sync.default_suspend_ns` (set from silicon directly: an incomplete
/// try_wait without a hint answers as fast as a complete one, calibration/mbarrier.ptx).
pub const FIT_PARAMS: &[FitParam] = &[
    fp("issue.branch_cycles", 1.0, 50.0),
    fp("issue.branch_taken_cycles", 0.0, 50.0),
    fp("issue.yield_cycles", 0.0, 200.0),
    fp("issue.cp_async_filler_cycles", 0.0, 20.0),
    fp("issue.warp_issue_cycles", 1.0, 8.0),
    fp("latency.alu", 1.0, 40.0),
    fp("latency.predicate_branch", 0.0, 100.0),
    fp("latency.window_base", 0.0, 100.0),
    fp("latency.window_lea", 0.0, 100.0),
    fp("latency.window_swinhi", 0.0, 200.0),
    fp("latency.mul", 1.0, 40.0),
    fp("latency.fp32", 1.0, 40.0),
    fp("latency.fp64", 1.0, 80.0),
    fp("latency.div", 1.0, 400.0),
    fp("latency.warp_op", 1.0, 100.0),
    fp("latency.redux", 1.0, 200.0),
    fp("latency.match_sync", 1.0, 200.0),
    fp("latency.activemask", 1.0, 100.0),
    fp("latency.sreg", 1.0, 100.0),
    fp("latency.clock", 1.0, 100.0),
    fp("latency.param", 1.0, 200.0),
    fp("latency.local", 1.0, 400.0),
    fp("latency.misc", 1.0, 200.0),
    fp("latency.mufu", 1.0, 200.0),
    fp("latency.shfl", 1.0, 200.0),
    fp("latency.mma", 1.0, 400.0),
    fp("smem.latency", 1.0, 200.0),
    fp("smem.atomic_latency", 1.0, 400.0),
    fp("smem.conflict_replay_cycles", 1.0, 16.0),
    fp("smem.queue_instructions", 1.0, 64.0),
    fp("smem.store_queue_instructions", 1.0, 64.0),
    fp("global.latency", 1.0, 2000.0),
    fp("global.atomic_latency", 1.0, 4000.0),
    fp("global.write_ack_cycles", 1.0, 2000.0),
    fp("global.far_line_cycles", 0.0, 1000.0),
    fp("global.l1_latency", 1.0, 400.0),
    fp("global.bytes_per_cycle", 1.0, 256.0),
    fp("global.store_full_sector_cycles", 0.0, 16.0),
    fp("global.store_partial_line_cycles", 0.0, 16.0),
    fp("global.store_partial_sector_cycles", 0.0, 16.0),
    fp("global.store_partial_sector_warp_cycles", 0.0, 4.0),
    fp("global.store_chunk_bytes_per_cycle", 1.0, 128.0),
    fp("global.store_line_reuse_cycles", 0.0, 200.0),
    fp("global.store_warps_counted", 1.0, 64.0),
    fp("global.store_issue_cycles", 1.0, 64.0),
    fp("global.store_operand_bytes_per_cycle", 1.0, 256.0),
    fp("global.store_queue", 1.0, 64.0),
    fp("global.warp_inflight_sectors", 1.0, 1024.0),
    fp("global.queue_cycles", 1.0, 1024.0),
    fp("dsmem.latency", 1.0, 2000.0),
    fp("dsmem.sync_latency", 1.0, 2000.0),
    fp("dsmem.bytes_per_cycle", 1.0, 256.0),
    fp("dsmem.queue_cycles", 1.0, 1024.0),
    fp("dsmem.load_bytes_per_cycle", 1.0, 512.0),
    fp("dsmem.load_request_bytes_per_cycle", 1.0, 1024.0),
    fp("dsmem.async_bytes_per_cycle", 1.0, 512.0),
    fp("dsmem.store_operand_bytes_per_cycle", 1.0, 512.0),
    fp("sync.named_barrier_request_cycles", 1.0, 200.0),
    fp("sync.named_barrier_release_cycles", 1.0, 200.0),
    fp("sync.named_barrier_sleep_cycles", 0.0, 2000.0),
    fp("sync.named_barrier_wake_cycles", 0.0, 200.0),
    fp("sync.named_barrier_wake_spacing_cycles", 0.0, 50.0),
    fp("sync.named_barrier_arrival_cycles", 1.0, 50.0),
    fp("sync.named_barrier_red_cycles", 0.0, 50.0),
    fp("sync.mbarrier_request_cycles", 1.0, 200.0),
    fp("sync.mbarrier_response_cycles", 1.0, 200.0),
    fp("sync.cluster_barrier_cycles", 1.0, 1000.0),
    fp("sync.cluster_release_cycles", 1.0, 1000.0),
    fp("sync.mbarrier_wake_cycles", 0.0, 1000.0),
    fp("sync.release_after_shared_write_cycles", 0.0, 200.0),
    fp("sync.mbarrier_phase_check_cycles", 0.0, 1000.0),
    fp("sync.phase_check_port_cycles", 1.0, 12.0),
    fp("tma.per_lane_issue_cycles", 0.0, 200.0),
    fp("tma.prefetch_issue_cycles", 0.0, 200.0),
    fp("tma.map_fetch_cycles", 0.0, 1000.0),
    fp("tma.first_read_cycles", 0.0, 2000.0),
    fp("tma.first_read_after_store_cycles", 0.0, 2000.0),
    fp("tma.first_read_after_load_cycles", 0.0, 2000.0),
    fp("sync.fence_cta_cycles", 1.0, 200.0),
    fp("sync.fence_proxy_cycles", 1.0, 200.0),
    fp("sync.named_barrier_red_result_cycles", 0.0, 200.0),
    fp("sync.mbarrier_init_setup_cycles", 0.0, 200.0),
    fp("sync.release_drain_cycles", 1.0, 4000.0),
    fp("sync.release_gather_cycles", 0.0, 200.0),
    fp("sync.release_round_size", 1.0, 64.0),
    fp("sync.release_round_gap_cycles", 0.0, 4000.0),
    // calibration/smem_cas_atomics.ptx: ptxas's compare-and-swap loops
    fp("smem.cas_first_cycles", 1.0, 2000.0),
    fp("smem.cas_pass_cycles", 1.0, 1000.0),
    fp("sync.cp_async_arrive_cycles", 1.0, 500.0),
    fp("sync.cp_async_wait_cycles", 0.0, 500.0),
    fp("tma.issue_cycles", 1.0, 400.0),
    fp("tma.command_cycles", 0.0, 400.0),
    fp("tma.complete_tx_cycles", 1.0, 400.0),
    fp("tma.prefetch_command_cycles", 0.0, 400.0),
    fp("tma.store_start_cycles", 0.0, 400.0),
    fp("tma.write_bytes_per_cycle", 1.0, 128.0),
    fp("tma.reduce_bytes_per_cycle", 1.0, 128.0),
    fp("tma.store_ack_cycles", 0.0, 400.0),
    fp("tma.reduce_ack_cycles", 0.0, 400.0),
    // calibration/wgmma.ptx: one wgmma's latency and 8 chained ones per shape and family
    fp("wgmma.pipeline_cycles", 1.0, 400.0),
    fp("wgmma.min_cycles", 1.0, 400.0),
    fp("wgmma.f16_cycles_per_n8", 1.0, 64.0),
    fp("wgmma.tf32_cycles_per_n8", 1.0, 64.0),
    fp("wgmma.fp8_cycles_per_n8", 1.0, 64.0),
    fp("wgmma.int8_cycles_per_n8", 1.0, 64.0),
];

/// The configuration with `key` (`section.key`) set to `v` (an integer key gets `v` rounded).
pub fn with_param(sm: &SmConfig, key: &str, v: f64) -> Result<SmConfig, String> {
    let mut t = toml::Value::try_from(sm).map_err(|e| e.to_string())?;
    let (sec, k) = key.split_once('.').ok_or_else(|| format!("bad parameter name `{key}`"))?;
    let slot = t.get_mut(sec).and_then(|s| s.get_mut(k)).ok_or_else(|| format!("sm90.toml has no `{key}`"))?;
    *slot = match slot {
        toml::Value::Integer(_) => toml::Value::Integer(v.round() as i64),
        toml::Value::Float(_) => toml::Value::Float(v),
        _ => return Err(format!("`{key}` is not a number")),
    };
    t.try_into().map_err(|e: toml::de::Error| e.to_string())
}

/// The value of `key` in `sm`.
pub fn param(sm: &SmConfig, key: &str) -> Result<f64, String> {
    match lookup(sm, key)? {
        toml::Value::Integer(i) => Ok(i as f64),
        toml::Value::Float(f) => Ok(f),
        _ => Err(format!("sm90.toml has no number `{key}`")),
    }
}

fn lookup(sm: &SmConfig, key: &str) -> Result<toml::Value, String> {
    let t = toml::Value::try_from(sm).map_err(|e| e.to_string())?;
    let (sec, k) = key.split_once('.').ok_or_else(|| format!("bad parameter name `{key}`"))?;
    t.get(sec).and_then(|s| s.get(k)).cloned().ok_or_else(|| format!("sm90.toml has no `{key}`"))
}

/// What a key was fitted to.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyProvenance {
    /// `section.key`.
    pub key: String,
    /// The fit-set figure that moved most (relative change of its RTL median) under the key's
    /// probes: (program, figure); None when no fit-set figure depends on the key.
    pub figure: Option<(String, String)>,
    /// Fit-set figures that moved under the probes.
    pub dependents: usize,
}

/// Outcome of [`fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// The fitted configuration.
    pub config: SmConfig,
    /// (key, before, after) for every searched parameter.
    pub changes: Vec<(String, f64, f64)>,
    /// Per searched parameter, what it was fitted to (from the first pass's probes).
    pub provenance: Vec<KeyProvenance>,
    /// (max, mean) |relative error| over the fit set before.
    pub before: (f64, f64),
    /// After.
    pub after: (f64, f64),
    /// Program runs on the RTL engine.
    pub runs: usize,
    /// Fit-set figures scored.
    pub figures: usize,
}

type Figures = Result<Vec<FigureSamples>, String>;

/// The fit set of a workload and its figures at the current configuration.
struct FitState<'w> {
    w: &'w Workload,
    figures: Vec<Figures>,
    runs: usize,
}

impl FitState<'_> {
    fn score_with(&self, replaced: &[(usize, Figures)]) -> (f64, f64) {
        let rows: Vec<_> = (0..self.figures.len())
            .flat_map(|k| {
                let f = replaced.iter().find(|(j, _)| *j == k).map(|(_, f)| f).unwrap_or(&self.figures[k]);
                rows_of(&self.w.records()[k], f)
            })
            .collect();
        error_stats(&rows)
    }

    fn run(&mut self, ks: &[usize], sm: &SmConfig) -> Vec<(usize, Figures)> {
        self.runs += ks.len();
        ks.iter().copied().zip(self.w.run_many(ks, sm)).collect()
    }
}

/// Relative change of each figure of `new` against `old` (same program), with its name.
fn moved(old: &Figures, new: &Figures) -> Vec<(String, f64)> {
    match (old, new) {
        (Ok(a), Ok(b)) => a
            .iter()
            .zip(b)
            .filter(|(x, y)| x.median != y.median)
            .map(|(x, y)| (x.name.clone(), if x.median == 0.0 { f64::INFINITY } else { ((y.median - x.median) / x.median).abs() }))
            .collect(),
        (Err(a), Err(b)) if a == b => Vec::new(),
        _ => vec![(String::new(), f64::INFINITY)],
    }
}

/// The candidate values of a parameter around `v0`: fixed factors and +-1, clipped to its range,
/// rounded for an integer key, without `v0` itself.
fn candidates(v0: f64, p: &FitParam, int: bool) -> Vec<f64> {
    const FACTORS: [f64; 10] = [0.25, 0.5, 0.7, 0.85, 0.95, 1.05, 1.2, 1.5, 2.0, 4.0];
    let mut c: Vec<f64> = FACTORS.iter().map(|f| v0 * f).chain([v0 - 1.0, v0 + 1.0]).map(|v| clip(v, p, int)).collect();
    c.sort_by(f64::total_cmp);
    c.dedup();
    c.retain(|v| *v != v0);
    c
}

/// `v` in the parameter's range, rounded for an integer key.
fn clip(v: f64, p: &FitParam, int: bool) -> f64 {
    let v = v.clamp(p.min, p.max);
    if int {
        v.round()
    } else {
        v
    }
}

/// What [`probe`] found: the dependent programs, ((program index, figure) that moved most,
/// figures that moved), and the probes' full runs (value, every program's figures).
type Probed = (Vec<usize>, (Option<(usize, String)>, usize), Vec<(f64, Vec<(usize, Figures)>)>);

/// Runs every fit-set program with `p` at half and at double `v0` (clipped to its range).
fn probe(st: &mut FitState, all: &[usize], cur: &SmConfig, p: &FitParam, v0: f64, int: bool) -> Result<Probed, String> {
    let mut probes: Vec<f64> = [clip(v0 * 0.5, p, int), clip(v0 * 2.0, p, int)].into_iter().filter(|v| *v != v0).collect();
    probes.dedup();
    let mut dependent: Vec<usize> = Vec::new();
    let mut strongest: Option<(usize, String, f64)> = None;
    let mut nmoved = std::collections::BTreeSet::new();
    let mut scored = Vec::new();
    for v in probes {
        let res = st.run(all, &with_param(cur, p.key, v)?);
        for (k, f) in &res {
            let m = moved(&st.figures[*k], f);
            if !m.is_empty() && !dependent.contains(k) {
                dependent.push(*k);
            }
            for (name, change) in m {
                nmoved.insert((*k, name.clone()));
                if strongest.as_ref().is_none_or(|s| change > s.2) {
                    strongest = Some((*k, name, change));
                }
            }
        }
        scored.push((v, res));
    }
    dependent.sort_unstable();
    Ok((dependent, (strongest.map(|(k, n, _)| (k, n)), nmoved.len()), scored))
}

/// Deterministic coordinate search over `params` on the fit-set records of `w` (validation records
/// are left out): per parameter, two probes (in the first pass) find the programs that depend on it
/// and the figure that names its provenance, then each candidate value is scored with those
/// programs re-run, and the best by (max, mean) |relative error| is kept (ties keep the current
/// value). Repeats until a pass changes nothing, at most `passes` times.
pub fn fit(w: &Workload, start: &SmConfig, params: &[FitParam], passes: usize) -> Result<FitResult, String> {
    let fit_set = w.only(Set::Fit);
    let all: Vec<usize> = (0..fit_set.records().len()).collect();
    let mut st = FitState { w: &fit_set, figures: Vec::new(), runs: 0 };
    st.figures = st.run(&all, start).into_iter().map(|(_, f)| f).collect();
    let mut cur = start.clone();
    let before = st.score_with(&[]);
    let mut best = before;
    let mut provenance: Vec<KeyProvenance> = params.iter().map(|p| KeyProvenance { key: p.key.into(), figure: None, dependents: 0 }).collect();
    let mut deps: Vec<Option<Vec<usize>>> = vec![None; params.len()];
    let better = |a: (f64, f64), b: (f64, f64)| a.0 < b.0 - 1e-12 || (a.0 <= b.0 + 1e-12 && a.1 < b.1 - 1e-12);
    for _ in 0..passes {
        let mut changed = false;
        for (pi, p) in params.iter().enumerate() {
            let v0 = param(&cur, p.key)?;
            let int = matches!(lookup(&cur, p.key)?, toml::Value::Integer(_));
            // Probes (first pass only): which programs move, and which figure moves most.
            let mut scored: Vec<(f64, Vec<(usize, Figures)>)> = Vec::new();
            if deps[pi].is_none() {
                let (dependent, prov, runs) = probe(&mut st, &all, &cur, p, v0, int)?;
                provenance[pi] = KeyProvenance { key: p.key.into(), figure: prov.0.map(|(k, name)| (fit_set.records()[k].program.clone(), name)), dependents: prov.1 };
                deps[pi] = Some(dependent);
                scored = runs;
            }
            let dependent = deps[pi].clone().unwrap_or_default();
            // Candidates: the probes' full runs, the rest with the dependent programs re-run.
            for v in candidates(v0, p, int) {
                let res = match scored.iter().position(|(pv, _)| *pv == v) {
                    Some(i) => std::mem::take(&mut scored[i].1),
                    None if dependent.is_empty() => continue,
                    None => st.run(&dependent, &with_param(&cur, p.key, v)?),
                };
                let s = st.score_with(&res);
                if better(s, best) {
                    best = s;
                    cur = with_param(&cur, p.key, v)?;
                    for (k, f) in res {
                        st.figures[k] = f;
                    }
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let changes = params.iter().map(|p| Ok((p.key.to_string(), param(start, p.key)?, param(&cur, p.key)?))).collect::<Result<_, String>>()?;
    let figures = fit_set.records().iter().map(|r| r.figures.len()).sum();
    debug_assert!(fit_set.records().iter().all(|r| set_of(&r.program) == Set::Fit));
    Ok(FitResult { config: cur, changes, provenance, before, after: best, runs: st.runs, figures })
}

/// Writes the fitted values into sm90.toml's text, keeping every other line. For every key with a
/// provenance figure: its `key = value` line gets the fitted value, and the comment block above it
/// loses "Assumed until measured ..." and any earlier fit's sentence and gains
/// `Fitted by hopsync calibrate fit to PROGRAM "FIGURE" (and N more fit-set figures), CARD (was V).`
/// Keys no fit-set figure depends on keep their comment (still assumed).
pub fn apply_fit(toml_text: &str, changes: &[(String, f64, f64)], provenance: &[KeyProvenance], card: &str) -> Result<String, String> {
    let mut lines: Vec<String> = toml_text.lines().map(String::from).collect();
    for (key, before, after) in changes {
        let Some(prov) = provenance.iter().find(|p| &p.key == key) else { continue };
        let Some((program, figure)) = &prov.figure else { continue };
        let i = key_line(&lines, key)?;
        let (_, k) = key.split_once('.').expect("checked by key_line");
        let float = lines[i].split('=').nth(1).is_some_and(|v| v.contains('.'));
        let show = |v: f64| if float { format!("{v:.1}") } else { format!("{}", v.round() as i64) };
        lines[i] = format!("{k} = {}", show(*after));
        let mut j = i;
        while j > 0 && lines[j - 1].trim_start().starts_with('#') {
            j -= 1;
        }
        let text = strip_provenance(&lines[j..i].iter().map(|l| l.trim_start_matches('#').trim()).collect::<Vec<_>>().join(" "));
        let prog = program.strip_prefix("firmware/programs/").unwrap_or(program);
        let more = if prov.dependents > 1 { format!(" (and {} more fit-set figures)", prov.dependents - 1) } else { String::new() };
        let line = format!("Fitted by `hopsync calibrate fit` to {prog} \"{figure}\"{more}, {card} (was {}).", show(*before));
        let mut block = wrap_comment(&text);
        block.extend(wrap_comment(&line));
        lines.splice(j..i, block);
    }
    Ok(lines.join("\n") + "\n")
}

/// Index of the `key = value` line of `section.key`.
fn key_line(lines: &[String], key: &str) -> Result<usize, String> {
    let (sec, k) = key.split_once('.').ok_or_else(|| format!("bad parameter name `{key}`"))?;
    let mut in_sec = false;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            in_sec = t == format!("[{sec}]");
        } else if in_sec && !t.starts_with('#') && t.split('=').next().map(str::trim) == Some(k) {
            return Ok(i);
        }
    }
    Err(format!("sm90.toml has no `{key}`"))
}

/// A key's comment text without the placeholder sentence and without an earlier fit's sentence
/// (`Fitted to ... (was V).` or `Fitted by ... (was V).`), blanks normalized.
fn strip_provenance(text: &str) -> String {
    let mut t = text.replace("Assumed until measured by the silicon issue.", "");
    while let Some(a) = t.find("Fitted to ").or_else(|| t.find("Fitted by ")) {
        let was = t[a..].find("(was ").map(|e| a + e).unwrap_or(a);
        let end = t[was..].find(").").map(|e| was + e + 2).unwrap_or(t.len());
        t.replace_range(a..end, "");
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as `# ` comment lines of at most 100 columns (none for empty text).
fn wrap_comment(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::from("#");
    for w in text.split_whitespace() {
        if cur.len() + 1 + w.len() > 100 && cur != "#" {
            out.push(std::mem::replace(&mut cur, String::from("#")));
        }
        cur.push(' ');
        cur.push_str(w);
    }
    if cur != "#" {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_provenance_drops_the_placeholder_and_earlier_fits() {
        assert_eq!(strip_provenance("Cycles per x. Assumed until measured by the silicon issue."), "Cycles per x.");
        assert_eq!(strip_provenance("Cycles. Fitted to the 11 programs of calibration/ on H200 2026-11-22 by `hopsync calibrate fit` (was 4)."), "Cycles.");
        assert_eq!(strip_provenance("A. Fitted by `hopsync calibrate fit` to x.ptx \"f (y)\" (and 2 more), H100 (was 3). B."), "A. B.");
    }

    #[test]
    fn candidates_stay_in_range_without_the_current_value() {
        let p = fp("issue.branch_cycles", 1.0, 50.0);
        let c = candidates(1.0, &p, true);
        assert!(c.iter().all(|v| (1.0..=50.0).contains(v) && *v != 1.0), "{c:?}");
        assert!(c.contains(&2.0) && c.contains(&4.0));
    }
}
