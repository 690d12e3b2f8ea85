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
