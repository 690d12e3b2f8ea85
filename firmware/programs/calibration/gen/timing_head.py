"""The head the generated calibration programs share (gen/*.py): the `//!` manifest of a one-CTA
(or one-cluster) launch whose timing samples go to the u64 buffer `t` (one group of samples a
figure) and whose threads each add 1 to `done`, then the PTX up to the kernel's parameter list."""


def head(description, entry, threads, figures, samples, buffers=(), ctas=1):
    """description: its `//! ` lines, the last without a newline; figures: their names in `t`'s
    order, `samples` u64 each; buffers: (name, bytes) of scratch buffers before `t`, each passed
    as the parameter `<name>_ptr` before `t_ptr` and `done_ptr`; ctas > 1: one cluster of that
    many CTAs (`done` then counts every CTA's threads)."""
    names = [b for b, _ in buffers] + ["t", "done"]
    lines = ['//! description = """', description + '"""', "//! [launch]", f"//! grid = [{ctas}, 1, 1]", f"//! block = [{threads}, 1, 1]"]
    if ctas > 1:
        lines.append(f"//! cluster = [{ctas}, 1, 1]")
    for name, size in buffers:
        lines += ["//! [[buffer]]", f'//! name = "{name}"', f"//! bytes = {size}"]
    lines += [
        "//! [[buffer]]",
        '//! name = "t"',
        f"//! bytes = {len(figures) * samples * 8}",
        '//! type = "u64"',
        "//! output = true",
        "//! timing = true",
        f"//! figures = [{', '.join(chr(34) + f + chr(34) for f in figures)}]",
        "//! [[buffer]]",
        '//! name = "done"',
        "//! bytes = 4",
        "//! output = true",
        f"//! expect = [{threads * ctas}]",
    ]
    for n in names:
        lines += ["//! [[param]]", f'//! name = "{n}_ptr"', f'//! buffer = "{n}"']
    lines += ["//", ".version 8.0", ".target sm_90", ".address_size 64", "", f".visible .entry {entry}("]
    lines.append(",\n".join(f"\t.param .u64 {n}_ptr" for n in names))
    lines.append(")")
    return "\n".join(lines) + "\n"


def window_open(lab, figure, spin, issuing):
    """The head of one round of a clock-to-clock window figure (mem_queues.py, dsmem_stores.py):
    every warp spins `spin` cycles on %clock64 (the paths drain), bar.sync 0, an ld.shared of the
    flag (%r8) and its use into %r9 (the barrier has released the warp), then the warps that
    `issuing` (a predicate) names read the clock into %rd30. The round counter is %r90."""
    return f'''	// ---- figure: {figure} ----
	mov.u32 %r90, 0;
round_{lab}:
	.pragma "nounroll";
	mov.u64 %rd90, %clock64;
spin_{lab}:
	mov.u64 %rd91, %clock64;
	sub.s64 %rd91, %rd91, %rd90;
	setp.lt.s64 %p9, %rd91, {spin};
	@%p9 bra spin_{lab};
	bar.sync 0;
	ld.shared.u32 %r15, [%r8];
	add.u32 %r9, %r9, %r15;
	@!{issuing} bra skip_{lab};
	mov.u64 %rd30, %clock64;
'''


def window_close(lab, first, slot, rounds):
    """The tail of the round (after the window's closing clock read into %rd31): lane 0 (%p0)
    stores %rd31 - %rd30 in `t` (its base in %rd80) at u64 index slot + first + round (`first` a
    register or number: the warp's first sample), then the next of `rounds` rounds."""
    return f'''	@!%p0 bra skip_{lab};
	add.u32 %r16, {first}, %r90;
	sub.s64 %rd3, %rd31, %rd30;
	add.u32 %r17, %r16, {slot};
	mul.wide.u32 %rd4, %r17, 8;
	add.s64 %rd5, %rd80, %rd4;
	st.global.u64 [%rd5], %rd3;
skip_{lab}:
	add.u32 %r90, %r90, 1;
	setp.lt.u32 %p90, %r90, {rounds};
	@%p90 bra round_{lab};
'''
