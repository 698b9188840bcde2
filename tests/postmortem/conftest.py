"""Fixtures for post-mortem tests: real multi-process JAX programs that hang, killed at teardown."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "hang_program.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def point_line(name: str, program: Path = PROGRAM) -> int:
    """Line of the `# POINT:<name>` marker in the program."""
    for i, line in enumerate(program.read_text().splitlines(), 1):
        if re.search(rf"# POINT:{re.escape(name)}\b", line):
            return i
    raise LookupError(name)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        JAX_PLATFORMS="cpu",
        JAX_NUM_CPU_DEVICES="1",
        # A failing test must never leave a collective waiting 30 minutes.
        XLA_FLAGS="--xla_cpu_collective_timeout_seconds=120",
        PYTHONUNBUFFERED="1",
    )
    for k in ("MCJAX_PYSPY", "MCJAX_DISABLE_PYSPY"):
        env.pop(k, None)
    env.update(extra or {})
    return env


class HangJob:
    """N processes of hang_program.py, started and waited for until each reached its hang."""

    def __init__(self, scenario: str, n: int, odd: int, workdir: Path, collective_timeout: int = 120) -> None:
        self.scenario, self.n, self.odd = scenario, n, odd
        self.workdir = workdir
        self.fallback_dir = workdir / "fallback"
        self.fallback_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = child_env({"MCJAX_FALLBACK_DIR": str(self.fallback_dir),
                         "XLA_FLAGS": f"--xla_cpu_collective_timeout_seconds={collective_timeout}"})
        self.procs = [
            subprocess.Popen(
                [sys.executable, str(PROGRAM), scenario, str(odd), str(n), str(i), str(port)],
                env=env, stdout=subprocess.PIPE, stderr=open(workdir / f"stderr-{i}.txt", "wb"),
                start_new_session=True,
            )
            for i in range(n)
        ]

    def wait_reached(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        pending = {p.stdout.fileno(): (i, p) for i, p in enumerate(self.procs)}
        buf: dict[int, bytes] = {}
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"processes {sorted(i for i, _ in pending.values())} did not start:\n{self.stderr()}")
            ready, _, _ = select.select(list(pending), [], [], min(left, 1.0))
            for fd in ready:
                chunk = os.read(fd, 4096)
                i, p = pending[fd]
                if not chunk:
                    raise RuntimeError(f"process {i} exited ({p.wait()}):\n{self.stderr()}")
                buf[fd] = buf.get(fd, b"") + chunk
                if b"reached" in buf[fd]:
                    del pending[fd]
        # Let the odd process get into its hang and the others into their collective.
        time.sleep(1.0)

    def stderr(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}" for f in sorted(self.workdir.glob("stderr-*.txt")))

    @property
    def targets(self) -> list[tuple[int, int, str]]:
        return [(i, p.pid, str(self.fallback_dir / f"stacks-{i}.txt")) for i, p in enumerate(self.procs)]

    def alive(self) -> list[bool]:
        return [p.poll() is None for p in self.procs]

    def kill(self) -> None:
        # SIGKILL: JAX's preemption notifier catches SIGTERM after initialize.
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            if p.stdout:
                p.stdout.close()


@pytest.fixture
def hang_job(tmp_path):
    jobs: list[HangJob] = []

    def start(scenario: str, n: int = 3, odd: int = 1) -> HangJob:
        job = HangJob(scenario, n, odd, tmp_path / f"{scenario}-{len(jobs)}")
        jobs.append(job)
        job.wait_reached()
        return job

    yield start
    for j in jobs:
        j.kill()


@pytest.fixture(scope="module")
def shared_hang_job(tmp_path_factory):
    """As `hang_job`, for tests that only look at a job (take its stacks, signal its dumper,
    ptrace it for a while) and leave it as it was: one job per (scenario, n, odd) in a module,
    started at its first use and killed after the module. Its collectives may wait 600 s (the
    program's own sleeps and barriers), not 120: it outlives several tests."""
    jobs: dict[tuple[str, int, int], HangJob] = {}

    def get(scenario: str, n: int = 3, odd: int = 1) -> HangJob:
        key = (scenario, n, odd)
        if key not in jobs:
            job = HangJob(scenario, n, odd, tmp_path_factory.mktemp(f"{scenario}-{n}-{odd}"), collective_timeout=600)
            try:
                job.wait_reached()
            except BaseException:
                job.kill()
                raise
            jobs[key] = job
        job = jobs[key]
        assert all(job.alive()), f"a shared job ended before its tests did:\n{job.stderr()}"
        return job

    yield get
    for j in jobs.values():
        j.kill()
