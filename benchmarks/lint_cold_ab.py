"""Cold lint of the corpus, two (or more) checkouts alternated side by side on one tree.

    python benchmarks/lint_speed.py --repeat 1 --fixit-subset ''   # once: builds benchmarks/.work/tree
    python benchmarks/lint_cold_ab.py --checkout /work/main --checkout . --repeat 3
    python benchmarks/lint_cold_ab.py --checkout A --checkout B --cache   # cold with the cache on

Each checkout's `mcjax_lint/` is copied and byte-compiled first (as an installed package is,
and so that edits made while this runs change nothing), then the real command
(`python -m mcjax_lint --format json --exit-zero --no-cache .`, or with `--cache` the cache on
and `.mcjax_cache/` removed before each run) runs on the same corpus tree, the checkouts in
turn (A B, B A, A B, ...: neither always runs first), each run's wall time and CPU time
(user+sys of the command and its workers) printed with the load average, then the medians. The
findings of every run must be byte-identical across checkouts (same JSON): a difference is
reported and the exit status is 1.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"


def snapshot(checkout: Path, dest: Path) -> str:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(checkout / "mcjax_lint", dest / "mcjax_lint", ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(str(dest / "mcjax_lint"), quiet=1)
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True,
                          timeout=60).stdout.strip() or "?"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(snap: Path, tree: Path, cache: bool, jobs: int | None) -> tuple[float, float, str]:
    cmd = [sys.executable, "-m", "mcjax_lint", "--format", "json", "--exit-zero", "."]
    if not cache:
        cmd.append("--no-cache")
    else:
        shutil.rmtree(tree / ".mcjax_cache", ignore_errors=True)
    if jobs:
        cmd += ["--jobs", str(jobs)]
    env = dict(os.environ, PYTHONPATH=str(snap))
    c0, t0 = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, cwd=tree, capture_output=True, timeout=3600, env=env)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if out.returncode not in (0, 2):
        raise SystemExit(f"mcjax-lint failed ({out.returncode}):\n{out.stderr.decode()[-3000:]}")
    return wall, cpu, hashlib.sha256(out.stdout).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", action="append", type=Path, required=True,
                    help="a checkout (a directory holding mcjax_lint/); give it twice or more")
    ap.add_argument("--repeat", type=int, default=3, help="cold runs of each checkout")
    ap.add_argument("--tree", type=Path, default=WORK / "tree", help="the corpus tree (default: lint_speed.py's)")
    ap.add_argument("--cache", action="store_true", help="cold with the cache on (removed before each run)")
    ap.add_argument("--jobs", type=int, default=None, help="mcjax-lint --jobs (default: all CPUs)")
    args = ap.parse_args(argv)
    if len(args.checkout) < 2:
        ap.error("give --checkout at least twice")
    if not (args.tree / "pyproject.toml").is_file():
        raise SystemExit(f"{args.tree}: no corpus tree (run benchmarks/lint_speed.py once)")
    names = [f"{chr(ord('A') + i)}" for i in range(len(args.checkout))]
    snaps = [WORK / f"ab-{n}" for n in names]
    for n, c, s in zip(names, args.checkout, snaps):
        print(f"{n}: {c.resolve()} at {snapshot(c.resolve(), s)}")
    print(f"{os.cpu_count()} CPUs, {'cache on, removed before each run' if args.cache else '--no-cache'}", flush=True)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    outputs: set[str] = set()
    for i in range(args.repeat):
        order = list(zip(names, snaps))
        if i % 2:
            order.reverse()
        for n, s in order:
            load = os.getloadavg()[0]
            wall, cpu, digest = run(s, args.tree, args.cache, args.jobs)
            walls[n].append(wall)
            cpus[n].append(cpu)
            outputs.add(digest)
            print(f"  run {i + 1} {n}: {wall:6.2f} s wall, {cpu:6.2f} CPU s (load average {load:.1f} before), "
                  f"output {digest}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    for n in names:
        print(f"{n}: median {statistics.median(walls[n]):.2f} s wall, {statistics.median(cpus[n]):.2f} CPU s")
    if len(outputs) != 1:
        print(f"OUTPUTS DIFFER: {len(outputs)} distinct JSON outputs")
        return 1
    print("every run's JSON output identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
