"""What the report's causes cost: the time from a report built to its files written, with and
without the linting of the reported files (runtime_guard/causes.py, budget 2 s).

Runs real programs under `mcjax-guard -n 2`, alternating `MCJAX_NO_CAUSES=1` and the default,
and prints per program the median of `report.json`'s modification time minus the report's
`created` time (set once the stacks are in, just before the causes and the files), side by side,
and what `causes` held (a run whose linting ran past the 2 s budget gets its causes once the job
is stopped: counted apart, as its files are rewritten then). Then the in-process cost of
`attach_causes` alone on a saved report:
cold (a fresh interpreter: importing the linter included, as when nothing imported it before)
and warm (imported, as after the supervisor's start-up import).

    python benchmarks/report_causes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ["hazard_last_batch.py", "hazard_rank0_jit.py", "hazard_rank0_sync.py"]

ATTACH = r'''
import json, sys, time
t0 = time.perf_counter()
from runtime_guard.causes import attach_causes
from runtime_guard.report.model import Report
d = json.load(open(sys.argv[1]))
d["causes"] = None
t1 = time.perf_counter()
attach_causes(Report.from_dict(d), budget=60)
t2 = time.perf_counter()
attach_causes(Report.from_dict(d), budget=60)
t3 = time.perf_counter()
print(json.dumps({"cold": t2 - t1 + (t1 - t0), "warm": t3 - t2}))
'''


def run(program: str, causes: bool, tmp: Path) -> tuple[float, list, bool] | None:
    out = tmp / f"r-{program}-{causes}-{os.urandom(3).hex()}"
    env = dict(os.environ)
    env.pop("MCJAX_NO_CAUSES", None)
    if not causes:
        env["MCJAX_NO_CAUSES"] = "1"
    subprocess.run([sys.executable, "-m", "runtime_guard", "-n", "2", "--devices-per-process", "1",
                    "--collective-timeout", "30", "--report-dir",
                    str(out), "python", str(ROOT / "fixtures" / "programs" / program)],
                   env=env, cwd=tmp, capture_output=True, timeout=300)
    if not (out / "report.json").exists():  # (a run the load made end otherwise: not counted)
        return None
    rep = json.loads((out / "report.json").read_text())
    late = any("once the processes were stopped" in n for n in rep["notes"])
    return (out / "report.json").stat().st_mtime - rep["created"], rep.get("causes") or [], late


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("| program | report built → written, no causes (median s) | with causes (median s) | added s | causes |")
        print("|---|---:|---:|---:|---|")
        saved = None
        for program in PROGRAMS:
            off, on, found, late = [], [], [], 0
            for _ in range(args.repeats):
                without, with_ = run(program, False, tmp), run(program, True, tmp)
                if without is None or with_ is None:
                    continue
                off.append(without[0])
                t, found, was_late = with_
                if was_late:  # out of budget: the files were rewritten after the job stopped
                    late += 1
                else:
                    on.append(t)
            saved = saved or next(tmp.glob(f"r-{program}-True-*/report.json"), None)
            if not off:
                print(f"| {program} | no report in {args.repeats} runs | | | |")
                continue
            a = statistics.median(off)
            b = statistics.median(on) if on else float("nan")
            what = ", ".join(f"{c['code']} at line {c['line']}" for c in found) or "none"
            what += f" ({late} of {args.repeats} after the job stopped)" if late else ""
            print(f"| {program} | {a:.2f} | {b:.2f} | {b - a:+.2f} | {what} |")
        costs = [json.loads(subprocess.run([sys.executable, "-c", ATTACH, str(saved)], capture_output=True, text=True,
                                           cwd=ROOT, check=True).stdout) for _ in range(args.repeats)]
        print(f"\nattach_causes on {saved.parent.name}'s report: cold (import included) median "
              f"{statistics.median(c['cold'] for c in costs):.2f} s, warm median {statistics.median(c['warm'] for c in costs):.2f} s")
    observer_cost()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def observer_cost(n: int = 200_000) -> None:
    """What learning observed functions adds where the guard calls it: `Observer.saw` on a call
    position already seen, under 12 frames standing for JAX's (walked past to the user's frame),
    against the same call of a no-op, side by side. The hot path of a cached dispatch never
    calls it."""
    import time

    from runtime_guard.observe import Observer

    ns: dict = {}
    exec(compile("def inner(n, cb):\n    return cb() if n == 0 else inner(n - 1, cb)\n",
                 "/fake/jax/_src/dispatch.py", "exec"), ns)
    with tempfile.TemporaryDirectory() as d:
        ob = Observer(Path(d) / "observed.jsonl", ("/jax/",))
        here = sys._getframe

        def saw() -> None:
            ob.saw(here(1))

        def noop() -> None:
            here(1)

        best = {}
        for _ in range(3):
            for name, cb in (("noop", noop), ("saw", saw)):
                t = time.perf_counter()
                for _ in range(n // 100):
                    ns["inner"](12, cb)
                best[name] = min(best.get(name, 1e9), (time.perf_counter() - t) / (n // 100))
    print(f"\nObserver.saw on a seen call position (12 JAX frames below the user's): "
          f"{(best['saw'] - best['noop']) * 1e6:.2f} µs per call more than a no-op (best of 3)")


if __name__ == "__main__":
    main()
