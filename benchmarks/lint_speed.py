"""Lint speed on the real-JAX corpus: cold, warm, one changed file; side by side with Fixit.

    python benchmarks/fetch_corpus.py          # once: ~687k LOC of JAX libraries from PyPI
    python benchmarks/lint_speed.py            # 3 repetitions, medians
    python benchmarks/lint_speed.py --repeat 5 --fixit-subset flax

Every measurement runs the real command line (`python -m mcjax_lint ...`) in a subprocess on a
private copy of the corpus (benchmarks/.work/tree, its own project root and cache), so process
start-up, discovery, cache load and output are all counted:

- cold: no `.mcjax_cache/`;
- warm: the same command again, nothing changed;
- one file (pre-commit): one file edited, the command given just that file, as pre-commit runs
  it (whole-project facts come from the cache). Measured twice: an edit that leaves the file's
  cross-module summary unchanged (a comment), and one that changes it (a new function).

Fixit (libcst-based, its built-in rules) runs on a subset of the same tree (default: flax; the
whole corpus would take many minutes) next to mcjax-lint cold on that same subset, in the same
run, and the ratio is printed. Fixit is installed into a throwaway virtualenv under
benchmarks/.work/ (never a project dependency). The machine is shared: repeat and read medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = HERE / "corpus"
WORK = HERE / ".work"
FIXIT_VERSION = "2.2.1"


def loc(root: Path) -> tuple[int, int]:
    files = lines = 0
    for p in root.rglob("*.py"):
        files += 1
        with open(p, "rb") as f:
            lines += sum(1 for _ in f)
    return files, lines


def fresh_tree(src_dirs: list[Path], dest: Path) -> Path:
    """A private copy with its own project marker, so the cache and the project are just it."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for d in src_dirs:
        shutil.copytree(d, dest / d.name, ignore=shutil.ignore_patterns(".version"))
    # `[tool.mcjax]` makes it the project root (else the search goes on up to this checkout's
    # pyproject.toml, and the corpus would be linted as part of it, cache included).
    (dest / "pyproject.toml").write_text("[project]\nname = 'corpus'\nversion = '0'\n\n[tool.mcjax]\n")
    # Its own git repository, as a user's project is (and so that the enclosing checkout's
    # .gitignore, which ignores benchmarks/.work/, does not hide the files).
    subprocess.run(["git", "init", "-q", str(dest)], check=True, timeout=60)
    return dest


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


CPU: dict[str, list[float]] = {}  # CPU seconds (user+sys, all processes) per measurement


def timed(label: str, cmd: list[str], cwd: Path, timeout: int) -> tuple[float, subprocess.CompletedProcess]:
    """Wall time, and the CPU time of the command and its workers recorded under `label`
    (on a shared machine CPU time varies much less than wall time)."""
    env = dict(os.environ, PYTHONPATH=str(SNAPSHOT)) if (SNAPSHOT / "mcjax_lint").is_dir() else None
    c0, t0 = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    dt = time.perf_counter() - t0
    CPU.setdefault(label, []).append(_children_cpu() - c0)
    return dt, out


SNAPSHOT = WORK / "snapshot"


def snapshot_package() -> str:
    """Copy mcjax_lint as it is now: the checkout is shared and edited while this runs, and an
    edit to the analysis code would (rightly) invalidate the cache between a cold and a warm run."""
    shutil.rmtree(SNAPSHOT, ignore_errors=True)
    shutil.copytree(REPO / "mcjax_lint", SNAPSHOT / "mcjax_lint", ignore=shutil.ignore_patterns("__pycache__"))
    # Byte-compiled, as an installed package is (pip compiles at install): with
    # PYTHONDONTWRITEBYTECODE set (it is on the benchmark machine) every run would otherwise
    # compile the modules it imports from source, ~0.07 s of a one-file run.
    import compileall

    compileall.compile_dir(str(SNAPSHOT / "mcjax_lint"), quiet=1)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                         timeout=60).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "mcjax_lint"], cwd=REPO, capture_output=True,
                           text=True, timeout=60).stdout.strip()
    return rev + (" + uncommitted changes in mcjax_lint/" if dirty else "")


def run_mcjax(tree: Path, args: list[str], jobs: int | None, label: str = "") -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "mcjax_lint", "--format", "json", "--exit-zero", *args]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    dt, out = timed(label, cmd, tree, 1800)
    if out.returncode not in (0, 2):
        raise SystemExit(f"mcjax-lint failed ({out.returncode}):\n{out.stderr[-3000:]}")
    findings = json.loads(out.stdout or "[]")
    errors = [line for line in out.stderr.splitlines() if ": error: " in line]
    return dt, {"findings": len(findings), "file_errors": len(errors)}


def ensure_fixit() -> Path:
    venv = WORK / "fixit-venv"
    exe = venv / "bin" / "fixit"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"fixit=={FIXIT_VERSION}"], check=True, timeout=900)
    return exe


def run_fixit(exe: Path, tree: Path) -> float:
    dt, out = timed("fixit", [str(exe), "lint", "."], tree, 3600)
    if out.returncode not in (0, 1):
        raise SystemExit(f"fixit failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return dt


def pick_file(tree: Path) -> Path:
    """A mid-sized module that imports jax (the kind of file a commit touches)."""
    cands = []
    for p in sorted(tree.rglob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace")
        n = text.count("\n")
        if 300 <= n <= 800 and "import jax" in text and "process_index" in text:
            cands.append((abs(n - 500), p))
    return min(cands)[1] if cands else sorted(tree.rglob("*.py"))[0]


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="mcjax-lint --jobs (default: all CPUs)")
    ap.add_argument("--fixit-subset", default="flax", help="corpus package(s) for the Fixit comparison, comma-separated ('' to skip)")
    ap.add_argument("--packages", default="", help="only these corpus packages (comma-separated; default all)")
    args = ap.parse_args(argv)

    if not CORPUS.is_dir() or not any(CORPUS.iterdir()):
        subprocess.run([sys.executable, str(HERE / "fetch_corpus.py")], check=True, timeout=1800)
    pkgs = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    if args.packages:
        wanted = set(args.packages.split(","))
        pkgs = [p for p in pkgs if p.name in wanted]
    print(f"mcjax-lint at {snapshot_package()}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

    tree = fresh_tree(pkgs, WORK / "tree")
    nfiles, nloc = loc(tree)
    print(f"corpus: {', '.join(p.name for p in pkgs)}: {nfiles} files, {nloc} LOC")

    cold, warm, one_same, one_changed = [], [], [], []
    info: dict = {}
    target = pick_file(tree)
    rel = target.relative_to(tree).as_posix()
    original = target.read_text(encoding="utf-8")
    for i in range(args.repeat):
        shutil.rmtree(tree / ".mcjax_cache", ignore_errors=True)
        target.write_text(original, encoding="utf-8")
        dt, info = run_mcjax(tree, ["."], args.jobs, "cold")
        cold.append(dt)
        # Let the racy-timestamp margin pass so the warm runs trust stat signatures, as they would
        # in real use (the cache is usually older than 2 s).
        time.sleep(2.1)
        dt, _ = run_mcjax(tree, ["."], args.jobs, "warm")
        warm.append(dt)
        # pre-commit: one edited file, passed alone, whole-project facts from the cache
        target.write_text(original + f"\n# edited {i}\n", encoding="utf-8")
        dt, _ = run_mcjax(tree, ["--force-exclude", rel], args.jobs, "one")
        one_same.append(dt)
        target.write_text(original + f"\n\ndef _bench_added_{i}():\n    import jax\n    return jax.process_index() == {i}\n",
                          encoding="utf-8")
        dt, _ = run_mcjax(tree, ["--force-exclude", rel], args.jobs, "one-summary")
        one_changed.append(dt)
        print(f"  run {i + 1}: cold {cold[-1]:.2f}s  warm {warm[-1]:.2f}s  one file {one_same[-1]:.2f}s "
              f"(summary changed: {one_changed[-1]:.2f}s)", flush=True)
    target.write_text(original, encoding="utf-8")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")

    rows = [
        ("mcjax-lint cold", cold, "cold", nloc),
        ("mcjax-lint warm (no change)", warm, "warm", nloc),
        ("mcjax-lint one file, pre-commit (comment edit)", one_same, "one", None),
        ("mcjax-lint one file, pre-commit (summary changed)", one_changed, "one-summary", None),
    ]
    print(f"\nfindings on the corpus: {info.get('findings')} ; file errors: {info.get('file_errors')} ; "
          f"one-file target: {rel}")
    print(f"\n{'measurement':<52} {'wall s':>7} {'LOC/s':>9} {'CPU s':>7}   wall runs")
    for name, runs, label, n in rows:
        t = med(runs)
        print(f"{name:<52} {t:>7.2f} {(f'{n / t:,.0f}' if n else '-'):>9} {med(CPU[label]):>7.2f}   "
              f"{', '.join(f'{x:.2f}' for x in runs)}")

    if args.fixit_subset:
        subset = [CORPUS / s for s in args.fixit_subset.split(",")]
        sub_tree = fresh_tree(subset, WORK / "tree-subset")
        sfiles, sloc = loc(sub_tree)
        exe = ensure_fixit()
        m_times, f_times = [], []
        for i in range(max(1, min(args.repeat, 2))):  # Fixit is slow: at most 2 repetitions
            shutil.rmtree(sub_tree / ".mcjax_cache", ignore_errors=True)
            m_times.append(run_mcjax(sub_tree, ["."], args.jobs, "subset")[0])
            f_times.append(run_fixit(exe, sub_tree))
            print(f"  {args.fixit_subset} run {i + 1}: mcjax-lint cold {m_times[-1]:.2f}s, fixit {f_times[-1]:.2f}s", flush=True)
        m, f = med(m_times), med(f_times)
        print(f"\nside by side on {args.fixit_subset} ({sfiles} files, {sloc} LOC), same tree, same run:")
        mc, fc = med(CPU["subset"]), med(CPU["fixit"])
        print(f"{'':<52} {'wall s':>7} {'LOC/s':>9} {'CPU s':>7}")
        print(f"{'mcjax-lint cold':<52} {m:>7.2f} {sloc / m:>9,.0f} {mc:>7.2f}")
        print(f"{'fixit ' + FIXIT_VERSION + ' lint (built-in rules)':<52} {f:>7.2f} {sloc / f:>9,.0f} {fc:>7.2f}")
        print(f"ratio Fixit / mcjax-lint: {f / m:.1f}x wall, {fc / mc:.1f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
