"""Helpers for running real multi-process programs under mcjax-guard."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "fixtures" / "programs"


def outputs_under_hash_seeds(code: str, seeds: tuple[str, ...] = ("1", "2")) -> set[str]:
    """What `python -c code` prints in fresh interpreters with different PYTHONHASHSEEDs (run
    from the repository root): one element when the printed value is the same in every process."""
    import os

    outs = set()
    for seed in seeds:
        env = dict(os.environ, PYTHONHASHSEED=seed, JAX_PLATFORMS="cpu")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                           check=True, cwd=ROOT)
        outs.add(r.stdout.strip())
    return outs


@dataclass
class GuardRun:
    code: int
    stdout: str
    stderr: str
    report_dir: Path
    seconds: float

    @property
    def report(self) -> dict | None:
        p = self.report_dir / "report.json"
        return json.loads(p.read_text()) if p.exists() else None

    @property
    def guard_messages(self) -> list[str]:
        """What the guard said on stderr besides its banner and a clean run's summary."""
        return [ln for ln in self.stderr.splitlines() if ln.startswith("mcjax-guard:") and not _BANNER.match(ln)
                and not re.match(r"mcjax-guard: \d+ processes, (\S+ dispatches compared, no divergence|.*nothing compared)", ln)]

    def process(self, index: int) -> dict:
        assert self.report is not None, self.stderr[-3000:]
        return next(p for p in self.report["processes"] if p["process_index"] == index)


# The banner `mcjax-guard -n N` prints first (runtime_guard/progress.py).
_BANNER = re.compile(r"^mcjax-guard: \d+ process(es)? x \d+ CPU devices?( \(.*?\))?, (fast|strict) mode, ")


def run_guard(program: Path, tmp_path: Path, *args: str, n: int = 2, timeout: float = 150,
              program_args: tuple[str, ...] = (), devices: int = 1) -> GuardRun:
    """`devices`: the programs here give each process one row of data per device, written for one
    device per process (which also keeps gloo from starving on 2 cores): they ask for it. The
    launcher's own default (2) is tested in test_launcher_cli.py."""
    import time

    report_dir = tmp_path / "reports"
    cmd = [sys.executable, "-m", "runtime_guard", "-n", str(n), "--devices-per-process", str(devices),
           "--collective-timeout", "30", "--report-dir", str(report_dir), *args, "python", str(program), *program_args]
    t = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return GuardRun(out.returncode, out.stdout, out.stderr, report_dir, time.monotonic() - t)


def site_markers(program: Path, kind: str = "site") -> dict[int, int]:
    """`# site: p0,p1` markers: process index -> line where the report must place it. With
    kind="crash", `# crash: p1`: the line a process died on, which its crash stack must show."""
    sites: dict[int, int] = {}
    for lineno, line in enumerate(program.read_text().splitlines(), 1):
        m = re.search(rf"# {kind}: ([p0-9, ]+)", line)
        if m:
            for p in re.findall(r"p(\d+)", m.group(1)):
                sites[int(p)] = lineno
    return sites


def process_count(program: Path) -> int:
    """`processes: N` in the docstring: how many processes the program needs (default 2)."""
    m = re.search(r"^processes: (\d+)$", program.read_text(), re.MULTILINE)
    return int(m.group(1)) if m else 2


def expected_kind(program: Path) -> str:
    m = re.search(r"guard: (\w+)", program.read_text())
    assert m, f"{program.name} has no `guard: <kind>` line in its docstring"
    return m.group(1)


# Runs already made in this session, by everything that decides their outcome: the same program
# with the same options and environment is started once, and each test asserts on that run (a
# hazard's report checked by test_programs.py for its kind and sites, by test_causes.py for the
# finding that explains it).
_SESSION_RUNS: dict[tuple, GuardRun] = {}


def _run_key(program: Path, args: tuple[str, ...], n: int, program_args: tuple[str, ...], devices: int) -> tuple:
    import os

    env = tuple(sorted((k, v) for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"))
    return (str(program.resolve()), args, n, program_args, devices, env)


@pytest.fixture
def guard_run(tmp_path: Path):
    def run(program: Path, *args: str, n: int | None = None, timeout: float = 150,
            program_args: tuple[str, ...] = (), devices: int = 1) -> GuardRun:
        n = process_count(program) if n is None else n
        key = _run_key(program, args, n, program_args, devices)
        if key not in _SESSION_RUNS:
            _SESSION_RUNS[key] = run_guard(program, tmp_path, *args, n=n, timeout=timeout,
                                           program_args=program_args, devices=devices)
        return _SESSION_RUNS[key]

    return run
