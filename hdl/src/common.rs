//! Small items shared by the unit files: the test-only helpers every unit's testbench uses
//! (a reproducible random generator and the yosys presence check).

/// Tiny xorshift64* generator: reproducible randomized tests without a dependency.
#[cfg(test)]
pub(crate) struct XorShift(pub u64);

#[cfg(test)]
impl XorShift {
    /// next 64 random bits
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// uniform in 0..n
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// true with probability p_percent / 100
    pub(crate) fn pct(&mut self, p_percent: u64) -> bool {
        self.below(10_000) < p_percent * 100
    }
}

/// yosys_validate shells out to yosys: fail loudly (never skip) when it is missing.
#[cfg(test)]
pub(crate) fn require_yosys() {
    if std::process::Command::new("yosys")
        .arg("-V")
        .output()
        .is_err()
    {
        panic!(
            "yosys is not on PATH, and yosys_validate needs it: \
             run `apt-get update && apt-get install -y yosys`"
        );
    }
}

/// A recorded cycle-by-cycle trace of a unit in the Rust simulation, replayed on the generated
/// Verilog under iverilog: an independent simulation of what `generate_verilog` emits (the Rust
/// model and the Verilog differ in width semantics, and check_all / yosys_validate do not
/// simulate).
#[cfg(test)]
pub(crate) struct Trace {
    /// input ports (name, width), the clock excluded
    pub inputs: Vec<(&'static str, usize)>,
    /// outputs sampled with the clock low, after the inputs settled (combinational: readies)
    pub pre: Vec<(&'static str, usize)>,
    /// outputs sampled after the rising edge settled (registered outputs)
    pub post: Vec<(&'static str, usize)>,
    /// per cycle: the inputs' hex values, then the expected output line
    pub rows: Vec<(Vec<String>, String)>,
    /// leading cycles not compared: RAM read registers start as X in Verilog, 0 in Rust
    pub warmup: usize,
}

#[cfg(test)]
impl Trace {
    /// A value's bits as lowercase hex without leading zeros.
    pub(crate) fn hex<T: rust_hdl::prelude::Synth>(v: T) -> String {
        let s = format!("{:x}", v.verilog());
        let h = s
            .split("'h")
            .nth(1)
            .unwrap()
            .trim_start_matches('0')
            .to_string();
        if h.is_empty() {
            "0".into()
        } else {
            h
        }
    }

    /// Replays the trace on `verilog` (module `top`) under iverilog and asserts every output
    /// of every cycle equals the Rust simulation's.
    pub(crate) fn check_with_iverilog(&self, name: &str, verilog: &str) {
        for tool in ["iverilog", "vvp"] {
            if std::process::Command::new(tool).arg("-V").output().is_err() {
                panic!(
                    "{tool} is not on PATH, and the Verilog cross-simulation needs it: \
                     run `apt-get update && apt-get install -y iverilog`"
                );
            }
        }
        let dir = std::env::temp_dir().join(format!("hopsync_xsim_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("dut.v"), verilog).unwrap();
        let n = self.rows.len();
        let mut tb =
            String::from("`timescale 1ns/1ps\nmodule tb;\n  reg clock = 0;\n  integer i, f;\n");
        for (p, w) in &self.inputs {
            tb += &format!(
                "  reg [{}:0] p_{p};\n  reg [{}:0] m_{p} [0:{}];\n",
                w - 1,
                w - 1,
                n - 1
            );
        }
        for (p, w) in self.pre.iter().chain(&self.post) {
            tb += &format!("  wire [{}:0] o_{p};\n", w - 1);
        }
        let conns: Vec<String> = std::iter::once(".clock(clock)".to_string())
            .chain(self.inputs.iter().map(|(p, _)| format!(".{p}(p_{p})")))
            .chain(
                self.pre
                    .iter()
                    .chain(&self.post)
                    .map(|(p, _)| format!(".{p}(o_{p})")),
            )
            .collect();
        tb += &format!("  top dut({});\n  initial begin\n", conns.join(", "));
        for (k, (p, _)) in self.inputs.iter().enumerate() {
            let body: String = self.rows.iter().map(|r| format!("{}\n", r.0[k])).collect();
            std::fs::write(dir.join(format!("in_{p}.hex")), body).unwrap();
            tb += &format!("    $readmemh(\"in_{p}.hex\", m_{p});\n");
        }
        tb += &format!(
            "    f = $fopen(\"out.txt\", \"w\");\n    for (i = 0; i < {n}; i = i + 1) begin\n"
        );
        for (p, _) in &self.inputs {
            tb += &format!("      p_{p} = m_{p}[i];\n");
        }
        let fmt = |v: &Vec<(&'static str, usize)>| -> (String, String) {
            (
                v.iter().map(|_| "%h").collect::<Vec<_>>().join(" "),
                v.iter()
                    .map(|(p, _)| format!("o_{p}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        };
        let (pf, pa) = fmt(&self.pre);
        let (qf, qa) = fmt(&self.post);
        tb += &format!("      #5;\n      $fwrite(f, \"{pf} \", {pa});\n");
        tb += &format!("      clock = 1;\n      #5;\n      $fwrite(f, \"{qf}\\n\", {qa});\n");
        tb += "      clock = 0;\n    end\n    $fclose(f);\n    $finish;\n  end\nendmodule\n";
        std::fs::write(dir.join("tb.v"), tb).unwrap();
        let run = |cmd: &str, args: &[&str]| {
            let o = std::process::Command::new(cmd)
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{cmd} failed in {}:\n{}\n{}",
                dir.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        };
        run("iverilog", &["-g2005", "-o", "sim", "tb.v", "dut.v"]);
        run("vvp", &["-n", "sim"]);
        let out = std::fs::read_to_string(dir.join("out.txt")).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines.len(),
            n,
            "iverilog produced {} of {n} cycles",
            lines.len()
        );
        let norm = |s: &str| -> String {
            s.split_whitespace()
                .map(|h| {
                    let t = h.trim_start_matches('0');
                    if t.is_empty() {
                        "0".to_string()
                    } else {
                        t.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let names: Vec<&str> = self.pre.iter().chain(&self.post).map(|p| p.0).collect();
        for (c, (row, line)) in self.rows.iter().zip(lines).enumerate().skip(self.warmup) {
            assert_eq!(
                norm(line),
                row.1,
                "cycle {c}: Verilog (left) and Rust (right) outputs {names:?} differ; inputs {:?}; files in {}",
                row.0,
                dir.display()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// yosys `flatten; check -assert` on the generated Verilog: catches combinational loops through
/// sub-blocks, which neither check_all nor yosys_validate (no flatten) report.
#[cfg(test)]
pub(crate) fn yosys_check_flat(name: &str, verilog: &str) {
    require_yosys();
    let dir = std::env::temp_dir().join(format!("hopsync_flat_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("top.v"), verilog).unwrap();
    let o = std::process::Command::new("yosys")
        .current_dir(&dir)
        .args([
            "-q",
            "-p",
            "read_verilog top.v; hierarchy -check -top top; proc; flatten; check -assert",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "yosys flatten; check -assert failed for {name}:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
