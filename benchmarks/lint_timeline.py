"""Wall-clock timeline of one uncached lint run: where a core is idle.

    cd <a project, e.g. benchmarks/.work/tree> && python <checkout>/benchmarks/lint_timeline.py --jobs 2 .

Runs the real pipeline in this process (`cli.main`, `--no-cache`) and records, as wall-clock
timestamps from the start of the program: the start and end of each runner phase, and each
worker task (summary or libcst analysis) with its process. Prints the phases, then per phase
of the pool the busy time of each process and the idle core-seconds (the phase's length times
the cores minus the busy time), the last task to end in each phase (the straggler) and the
longest tasks. Which checkout is measured is the one on PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time

T0 = time.time()

from mcjax_lint import cli, runner  # noqa: E402

_LOG = tempfile.mkdtemp(prefix="mcjax_timeline_")


def _record(kind: str, rel: str, start: float) -> None:
    with open(os.path.join(_LOG, str(os.getpid())), "a") as f:
        f.write(f"{kind}\t{rel}\t{start - T0:.4f}\t{time.time() - T0:.4f}\n")


def _wrap(name: str, kind: str) -> None:
    real = getattr(runner, name)

    def task(t):
        start = time.time()
        out = real(t)
        _record(kind, t[1], start)
        return out

    task.__module__, task.__qualname__, task.__name__ = runner.__name__, name, name
    setattr(runner, name, task)


def main(argv: list[str]) -> int:
    jobs = 1
    if argv[:1] == ["--jobs"]:
        jobs, argv = int(argv[1]), argv[2:]
    _wrap("_summarize_task", "summary")
    _wrap("_analyze_task", "analysis")
    phases: list[tuple[str, float, float]] = []
    phase = runner.RunStats.phase

    def timed_phase(self, name: str, since: float) -> float:
        now = phase(self, name, since)
        phases.append((name, time.time() - T0 - (now - since), time.time() - T0))
        return now

    runner.RunStats.phase = timed_phase
    imported = time.time() - T0
    with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
        cli.main(["--format", "json", "--exit-zero", "--no-cache", "--jobs", str(jobs), *argv])
    end = time.time() - T0
    tasks = []
    for name in os.listdir(_LOG):
        with open(os.path.join(_LOG, name)) as f:
            for line in f:
                kind, rel, a, b = line.rstrip("\n").split("\t")
                tasks.append((kind, rel, float(a), float(b), int(name)))
    print(f"imports done {imported:.2f} s; run ends {end:.2f} s (load average {os.getloadavg()[0]:.1f})")
    for name, a, b in phases:
        print(f"  {name:12s} {a:7.2f} -> {b:7.2f}  ({b - a:6.2f} s)")
    for kind in ("summary", "analysis"):
        mine = [t for t in tasks if t[0] == kind]
        if not mine:
            continue
        first, last = min(t[2] for t in mine), max(t[3] for t in mine)
        print(f"{kind}: {len(mine)} tasks, first start {first:.2f}, last end {last:.2f}")
        busy: dict[int, float] = {}
        ends: dict[int, float] = {}
        for t in mine:
            busy[t[4]] = busy.get(t[4], 0.0) + t[3] - t[2]
            ends[t[4]] = max(ends.get(t[4], 0.0), t[3])
        for pid in sorted(busy):
            print(f"  pid {pid}: busy {busy[pid]:.2f} s, last end {ends[pid]:.2f}")
        idle = (last - first) * jobs - sum(busy.values())
        print(f"  idle core-seconds in [{first:.2f}, {last:.2f}]: {idle:.2f}; "
              f"one core idle from {min(ends.values()):.2f} to {last:.2f}")
        for t in sorted(mine, key=lambda t: t[2] - t[3])[:6]:
            print(f"  {t[3] - t[2]:6.2f} s  {t[2]:7.2f} -> {t[3]:7.2f}  {t[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
