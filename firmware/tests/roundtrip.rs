//! parse -> print -> parse is the identity on every program in the repository.

use hopsync_firmware::{parser::parse_module, printer::print_module, Program};
use std::path::{Path, PathBuf};

fn ptx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            ptx_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "ptx") {
            out.push(p);
        }
    }
}

#[test]
fn every_good_program_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs");
    let mut files = Vec::new();
    ptx_files(&root, &mut files);
    let mut checked = 0;
    for f in files {
        if f.components().any(|c| c.as_os_str() == "bad") {
            continue;
        }
        let prog = Program::load(&f).unwrap_or_else(|d| panic!("{d}"));
        let text = print_module(&prog.module);
        let again = parse_module(&text).unwrap_or_else(|d| panic!("{}: reprint does not parse:\n{d}\n{text}", f.display()));
        assert_eq!(prog.module, again, "{}: round trip differs", f.display());
        assert_eq!(text, print_module(&again), "{}: printing is not stable", f.display());
        checked += 1;
    }
    assert!(checked > 0);
}
