"""Run JAX's own multi-process tests (tests/multiprocess/) under mcjax-guard, and count.

    python benchmarks/jax_multiprocess_suite.py JAX_CHECKOUT_OR_TESTS_DIR [options]

JAX's tests are not part of this project: fetch them at the installed JAX's tag (for JAX 0.10.2:
`git -C jax show jax-v0.10.2:tests/multiprocess/all_reduce_test.py > ...`, or a checkout of the
tag) and give their directory. Each file is a harness (jax._src.test_multiprocess, needs absl-py)
that re-executes itself as N workers. Every file that runs on CPU (tests/multiprocess/BUILD's
`enable_backends`, as open-source JAX builds it) is run in each of these ways:

  plain    python TEST.py --num_processes=N                      (no guard: the baseline)
  wrapped  mcjax-guard -n N --devices-per-process D python THIS --worker TEST.py
           (the guard starts each worker itself; this script, as --worker, hands the harness the
           worker's index and the guard's coordinator)
  harness  mcjax-guard python TEST.py --num_processes=N
           (the guard wraps the harness; its workers, which it starts as /proc/self/exe, are
           reached through mcjax-guard's start-up hook)

A run *passes* when it exits 0 and the guard wrote no report; a *report* is a run where the guard
wrote one (its kind is shown); anything else *fails*. The guard's own summary line says how many
dispatches it compared. Figures only, no assertions; the CPU is shared, so say what you ran.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

WAYS = ("plain", "wrapped", "harness")


def tests_dir(path: Path) -> Path:
    for d in (path / "tests" / "multiprocess", path):
        if any(d.glob("*_test.py")):
            return d
    raise SystemExit(f"error: no *_test.py in {path} or {path}/tests/multiprocess")


def cpu_files(d: Path) -> tuple[list[Path], dict[str, str]]:
    """The test files that run on CPU, and why the others do not (from BUILD when present:
    `enable_backends` without "cpu", or `if_oss([...], ...)` whose open-source list lacks it)."""
    files = sorted(d.glob("*_test.py"))
    build = d / "BUILD"
    if not build.exists():
        return files, {}
    skipped: dict[str, str] = {}
    for block in re.findall(r"jax_multiprocess_test\((.*?)\n\)", build.read_text(), re.S):
        main = re.search(r'main\s*=\s*"([^"]+)"', block)
        backends = re.search(r"enable_backends\s*=\s*(if_oss\(\s*\[(.*?)\]|\[(.*?)\])", block, re.S)
        if main is None or backends is None:
            continue
        listed = backends.group(2) if backends.group(2) is not None else backends.group(3)
        if '"cpu"' not in listed:
            shown = f"if_oss([{listed}], ...)" if backends.group(2) is not None else f"[{listed}]"
            skipped[main.group(1)] = "BUILD: enable_backends = " + " ".join(shown.split())
    return [f for f in files if f.name not in skipped], skipped


def worker_main(test: str, rest: list[str]) -> None:
    """One process of `mcjax-guard -n N`: run the harness as the worker the guard says it is."""
    import runpy

    env = os.environ
    sys.argv = [test, f"--num_processes={env['MCJAX_NUM_PROCESSES']}",
                f"--multiprocess_test_worker_id={env['MCJAX_PROCESS_ID']}",
                f"--multiprocess_test_controller_address={env['MCJAX_COORDINATOR_ADDRESS']}", "--logtostderr", *rest]
    sys.path[0] = os.path.dirname(os.path.abspath(test))
    runpy.run_path(test, run_name="__main__")


def command(way: str, test: Path, n: int, d: int, report_dir: Path, guard_args: list[str]) -> list[str]:
    guard = [sys.executable, "-m", "runtime_guard", "--report-dir", str(report_dir), *guard_args]
    if way == "plain":
        return [sys.executable, str(test), f"--num_processes={n}"]
    if way == "wrapped":
        return [*guard, "-n", str(n), "--devices-per-process", str(d), sys.executable, os.path.abspath(__file__),
                "--worker", str(test)]
    return [*guard, sys.executable, str(test), f"--num_processes={n}"]


def run_once(way: str, test: Path, n: int, d: int, timeout: float, guard_args: list[str], work: Path) -> dict:
    report_dir = Path(tempfile.mkdtemp(prefix=f"{test.stem}-{way}-", dir=work))
    logs = report_dir / "harness-logs"
    logs.mkdir()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(d), TEST_UNDECLARED_OUTPUTS_DIR=str(logs))
    cmd = command(way, test, n, d, report_dir, guard_args)
    t = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=test.parent, env=env)
        code, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        code, text = None, (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
    seconds = time.monotonic() - t
    report = report_dir / "report.json"
    kind = json.loads(report.read_text()).get("kind", "?") if report.exists() else None
    (report_dir / "output.txt").write_text(text)
    ran = [int(x) for x in re.findall(r"Ran (\d+) tests? in", text)]
    skipped = [int(x) for x in re.findall(r"OK \(skipped=(\d+)\)", text)]
    compared = re.findall(r"([\d,]+) dispatches compared", text)
    outcome = "report" if kind else "pass" if code == 0 else "timeout" if code is None else "fail"
    return {"file": test.name, "way": way, "outcome": outcome, "kind": kind, "code": code, "seconds": seconds,
            "tests": max(ran, default=0), "skipped": max(skipped, default=0),
            "compared": int(compared[-1].replace(",", "")) if compared else None, "dir": str(report_dir),
            "command": " ".join(cmd)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        worker_main(argv[1], argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path, help="a JAX checkout, or a directory holding tests/multiprocess files")
    p.add_argument("--files", default="", help="comma-separated file names (default: every file that runs on CPU)")
    p.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of {', '.join(WAYS)}")
    p.add_argument("-n", "--processes", type=int, default=4)
    p.add_argument("-d", "--devices-per-process", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1, help="runs of each file in each way (alternating ways)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    p.add_argument("--guard-args", default="", help="extra mcjax-guard options, e.g. '--mode strict'")
    p.add_argument("--work-dir", type=Path, default=None, help="where reports and outputs go (default: a temp dir)")
    p.add_argument("--json", type=Path, default=None, help="also write every run's result here")
    a = p.parse_args(argv)
    d = tests_dir(a.path.resolve())  # the runs start in other directories
    files, not_cpu = cpu_files(d)
    if a.files:
        wanted = {f if f.endswith(".py") else f + ".py" for f in a.files.split(",")}
        files = [f for f in sorted(d.glob("*_test.py")) if f.name in wanted]
    ways = [w for w in a.ways.split(",") if w]
    if not files or any(w not in WAYS for w in ways):
        p.error("no test files, or an unknown way")
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="jax-mp-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"JAX tests in {d}; {a.processes} processes x {a.devices_per_process} CPU devices; "
          f"{a.repeat} run(s) of each file in each way ({', '.join(ways)}); outputs in {work}")
    for name, why in sorted(not_cpu.items()):
        print(f"  not run (not on CPU): {name} ({why})")
    results = []
    for test in files:
        for i in range(a.repeat):
            for way in ways:
                r = run_once(way, test, a.processes, a.devices_per_process, a.timeout, a.guard_args.split(), work)
                results.append(r)
                if a.json:  # after every run: a long repetition cut short keeps what it measured
                    a.json.write_text(json.dumps(results, indent=1))
                print(f"  {test.name:28s} {way:8s} run {i + 1:2d}: {r['outcome']}{' (' + r['kind'] + ')' if r['kind'] else ''}"
                      f" exit {r['code']}, {r['tests']} tests ({r['skipped']} skipped), "
                      f"{'-' if r['compared'] is None else r['compared']} compared, {r['seconds']:.0f} s", flush=True)
    print("\nsummary (runs: pass / report / fail / timeout; median s)")
    for test in files:
        for way in ways:
            rs = [r for r in results if r["file"] == test.name and r["way"] == way]
            c = Counter(r["outcome"] for r in rs)
            secs = sorted(r["seconds"] for r in rs)
            kinds = Counter(r["kind"] for r in rs if r["kind"])
            print(f"  {test.name:28s} {way:8s} {c['pass']:3d} / {c['report']:3d} / {c['fail']:3d} / {c['timeout']:3d}"
                  f"  {secs[len(secs) // 2]:6.0f} s" + (f"  reports: {dict(kinds)}" if kinds else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
