//! The `hopsync` command line: demo, run with a JSON report, check, and the README's
//! instruction table generated from the opcode table.

use std::process::Command;

fn hopsync() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hopsync"))
}

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn demo_runs_and_explains() {
    let out = hopsync().arg("demo").current_dir(root()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("completed 4 phases"), "{text}");
    assert!(text.contains("expected: match"), "{text}");
    // then the RTL engine in lockstep, with its waves
    assert!(text.contains(" 0 divergences, outputs as expected"), "{text}");
    assert!(text.contains("gtkwave target/hopsync-demo/pipeline.vcd target/hopsync-demo/pipeline.gtkw"), "{text}");
    assert!(root().join("target/hopsync-demo/pipeline.vcd").is_file());
}

#[test]
fn run_writes_the_json_report() {
    let dir = std::env::temp_dir().join(format!("hopsync-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let out = hopsync()
        .args(["run", "firmware/programs/demo/pipeline.ptx", "--json"])
        .arg(&json)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in ["program", "engine", "status", "instructions", "outputs", "findings"] {
        assert!(v.get(key).is_some(), "report lacks `{key}`: {v}");
    }
    assert_eq!(v["status"], "ok");
    assert_eq!(v["engine"], "golden");
    assert_eq!(v["phases_completed"], 16);
    assert_eq!(v["outputs"]["out"].as_str().unwrap().len(), 384 * 2);
}

/// `run --config FILE`: the RTL engine times with the given sm90.toml-form file (an architect's
/// what-if); the golden model has no timing to configure; a bad file is named.
#[test]
fn run_takes_a_timing_configuration() {
    let dir = std::env::temp_dir().join(format!("hopsync-cli-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cycles = |config: Option<&std::path::Path>| {
        let json = dir.join("c.json");
        let mut cmd = hopsync();
        cmd.args(["run", "--engine", "rtl", "firmware/programs/calibration/mem_queues.ptx", "--json"]).arg(&json).current_dir(root());
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        v["cycles"].as_u64().unwrap()
    };
    let text = std::fs::read_to_string(root().join("sim/configs/sm90.toml")).unwrap();
    let same = dir.join("same.toml");
    std::fs::write(&same, &text).unwrap();
    let base = cycles(None);
    assert_eq!(cycles(Some(&same)), base, "the file as built in times the same");
    // a shared-memory queue of one instruction a scheduler: the 4 warps' st.shared bursts wait
    let narrow = dir.join("narrow.toml");
    let t = text.replacen("\nqueue_instructions = ", "\nqueue_instructions = 1\nold_queue_instructions = ", 1);
    let t = t.lines().filter(|l| !l.starts_with("old_queue_instructions")).collect::<Vec<_>>().join("\n");
    std::fs::write(&narrow, t).unwrap();
    assert!(cycles(Some(&narrow)) > base);
    let out = hopsync().args(["run", "firmware/programs/demo/pipeline.ptx", "--config"]).arg(&same).current_dir(root()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config needs --engine rtl"));
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[smem]\nbanks = ").unwrap();
    let out = hopsync().args(["run", "--engine", "rtl", "firmware/programs/demo/pipeline.ptx", "--config"]).arg(&bad).current_dir(root()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml"));
}

#[test]
fn check_and_usage_errors_exit_2() {
    let out = hopsync().args(["check", "firmware/programs/demo/pipeline.ptx"]).current_dir(root()).output().unwrap();
    assert!(out.status.success());
    let out = hopsync().args(["run", "no/such/file.ptx"]).current_dir(root()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read program"));
    let out = hopsync().args(["run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn readme_instruction_table_is_generated_from_the_opcode_table() {
    let out = hopsync().arg("ops").output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let begin = "<!-- ops-table-begin -->\n";
    let a = readme.find(begin).unwrap() + begin.len();
    let b = readme.find("<!-- ops-table-end -->").unwrap();
    assert_eq!(&readme[a..b], table, "README's table is stale: regenerate it with `hopsync ops`");
}
