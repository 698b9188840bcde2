"""Run one evaluation-set program as 2 real JAX processes on CPU and classify the outcome.

Shared by the sets' entry points (benchmarks/<set>/run_pair.py, whose docstrings give the commands).
Each program reads COORDINATOR_ADDRESS, NUM_PROCESSES and PROCESS_ID (as a launcher would set them)
and JOB_ID (the same on every process, as a scheduler's job id would be; the second set's programs
read it), and prints lines `RESULT <text>` for the values every process must agree on. Outcomes:

    agree     both processes exited 0 and printed the same RESULT lines
    diverge   both exited 0 but their RESULT lines differ
    error     a process exited non-zero (e.g. a collective timed out, a mismatch was raised)
    hang      a process was still running at the timeout (both are then killed)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NUM_PROCESSES = 2
COLLECTIVE_TIMEOUT_S = 15  # gloo gives up on a peer that never joins after this long


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)  # JAX catches SIGTERM after initialize
    except ProcessLookupError:
        pass


def run_program(path: Path, timeout: float = 60.0) -> dict:
    """Start the program as NUM_PROCESSES processes; return outcome, exit codes, results."""
    path = path.resolve()
    port = _free_port()
    procs, logs = [], []
    for pid in range(NUM_PROCESSES):
        env = dict(os.environ)
        env.update(COORDINATOR_ADDRESS=f"127.0.0.1:{port}", NUM_PROCESSES=str(NUM_PROCESSES),
                   PROCESS_ID=str(pid), JOB_ID=f"job{port}", JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1",
                   XLA_FLAGS=f"--xla_cpu_collective_timeout_seconds={COLLECTIVE_TIMEOUT_S}",
                   PYTHONUNBUFFERED="1")
        env.pop("PYTHONHASHSEED", None)  # each interpreter draws its own hash seed, as in real jobs
        log = tempfile.TemporaryFile(mode="w+")
        procs.append(subprocess.Popen([sys.executable, str(path)], cwd=path.parent, env=env,
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        logs.append(log)
    deadline = time.monotonic() + timeout
    hung = False
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung = True
    for p in procs:
        if p.poll() is None:
            _kill(p)
            p.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    results = [[ln for ln in out.splitlines() if ln.startswith("RESULT ")] for out in outputs]
    codes = [p.returncode for p in procs]
    if hung:
        outcome = "hang"
    elif any(c != 0 for c in codes):
        outcome = "error"
    elif results[0] != results[1] or not results[0]:
        outcome = "diverge" if results[0] != results[1] else "error"
    else:
        outcome = "agree"
    return {"outcome": outcome, "exit_codes": codes, "results": results,
            "tails": [out[-800:] for out in outputs]}


def evidence(r: dict) -> dict:
    """Exit codes and each process's last output line: enough to see why a run did not agree."""
    noise = ("For simplicity, JAX has removed", "-----", " ", "\t")
    last = [next((ln for ln in reversed(t.splitlines()) if ln.strip() and not ln.startswith(noise)), "")[-300:]
            for t in r["tails"]]
    return {"exit_codes": r["exit_codes"], "last_line_per_process": last}


def rerun_hazards(programs: Path, timeout: float, only: list[str]) -> dict:
    """Run every hazard.py once more, alone: its outcome and each process's last line."""
    report = {}
    for d in sorted(p for p in programs.iterdir() if p.is_dir()):
        if only and d.name not in only:
            continue
        h = run_program(d / "hazard.py", timeout)
        report[d.name] = {"outcome": h["outcome"], **evidence(h)}
        print(f"{d.name:<40} hazard={h['outcome']:<8} {report[d.name]['last_line_per_process']}", flush=True)
    return report


def confirm(programs: Path, timeout: float, only: list[str], details: bool = True) -> dict:
    """Run hazard.py and correct.py of every program dir; a pair is confirmed when the hazard
    does not agree and the correct look-alike agrees. With details, each record also holds the
    exit codes and last lines of both runs."""
    report = {}
    for d in sorted(p for p in programs.iterdir() if p.is_dir()):
        if only and d.name not in only:
            continue
        h = run_program(d / "hazard.py", timeout)
        c = run_program(d / "correct.py", timeout)
        ok = h["outcome"] != "agree" and c["outcome"] == "agree"
        report[d.name] = {"hazard": h["outcome"], "correct": c["outcome"], "confirmed": ok}
        if details:
            report[d.name].update(hazard_detail=evidence(h), correct_detail=evidence(c))
        print(f"{d.name:<40} hazard={h['outcome']:<8} correct={c['outcome']:<8} "
              f"{'confirmed' if ok else 'NOT CONFIRMED'}", flush=True)
        if not ok:
            for label, r in (("hazard", h), ("correct", c)):
                print(f"  {label}: codes={r['exit_codes']} results={r['results']}\n"
                      f"  tail0: {r['tails'][0][-400:]!r}\n  tail1: {r['tails'][1][-400:]!r}", flush=True)
    return report


def main(doc: str = __doc__, details: bool = True) -> int:
    """The command line; doc is the calling entry point's docstring (its first line describes it),
    details whether --confirm records each run's exit codes and last lines (the second set's)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--confirm", action="store_true", help="path is a programs directory")
    ap.add_argument("--rerun-hazards", action="store_true", help="path is a programs directory: hazards only")
    ap.add_argument("--only", nargs="*", default=[], help="with --confirm: these program ids")
    ap.add_argument("--json", type=Path, help="with --confirm or --rerun-hazards: write the outcomes here")
    args = ap.parse_args()
    if args.rerun_hazards:
        report = rerun_hazards(args.path, args.timeout, args.only)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        return 0
    if args.confirm:
        report = confirm(args.path, args.timeout, args.only, details)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        return 0 if all(r["confirmed"] for r in report.values()) else 1
    r = run_program(args.path, args.timeout)
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
