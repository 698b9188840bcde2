"""Programs that start their own JAX workers get guarded workers (runtime_guard.workers).

Real processes: `mcjax-guard python PROGRAM` (no -n) wraps a program that starts 2 JAX workers
itself (`subprocess` with `sys.executable`, `multiprocessing`); each worker joins a 2-process
job over a loopback coordinator. The hazard (process 0 runs one more collective, alone) must be
reported; its look-alike (only printing on process 0) must pass with dispatches compared.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runtime_guard import workers
from runtime_guard.settings import ENV, EXIT_DETECTED, GuardSettings
from tests.guard.conftest import GuardRun

HERE = Path(__file__).resolve().parent / "worker_programs"
HAZARD_LINE = next(i for i, line in enumerate((HERE / "worker.py").read_text().splitlines(), 1)
                   if "process 1 never runs it" in line)


def guard_program(tmp_path: Path, *program: str, timeout: float = 240) -> GuardRun:
    report_dir = tmp_path / "reports"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop(ENV, None)
    cmd = [sys.executable, "-m", "runtime_guard", "--report-dir", str(report_dir), "python", *program]
    t = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env)
    return GuardRun(out.returncode, out.stdout, out.stderr, report_dir, time.monotonic() - t)


def compared(run: GuardRun) -> int:
    m = re.search(r"([\d,]+) dispatches compared", run.stderr)
    assert m, run.stderr[-3000:]
    return int(m.group(1).replace(",", ""))


def assert_one_sided_reported(run: GuardRun, stacks: bool) -> None:
    assert run.code == EXIT_DETECTED, run.stderr[-3000:]
    rep = run.report
    assert rep is not None and rep["kind"] == "exited", run.stderr[-3000:]
    p0 = next(p for p in rep["processes"] if p["process_index"] == 0)
    assert p0["dispatch"]["location"]["line"] == HAZARD_LINE, p0
    if stacks:
        # The worker's own stacks (the supervisor's child is the launcher, not a process of the job).
        assert p0["snapshots"], rep["notes"]


LAUNCHERS = {
    "subprocess": ("launch_subprocess.py",),
    "spawn": ("launch_multiprocessing.py", "spawn"),
    "fork": ("launch_multiprocessing.py", "fork"),
}


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", sorted(LAUNCHERS))
def test_self_started_workers_one_sided_collective_reported(tmp_path: Path, how: str) -> None:
    script, *rest = LAUNCHERS[how]
    # A fork worker leaves through os._exit, without JAX's shutdown barrier: gloo then fails process
    # 0's collective at once, and it may be gone before its stacks are taken.
    assert_one_sided_reported(guard_program(tmp_path, str(HERE / script), "hazard", *rest), stacks=how != "fork")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", sorted(LAUNCHERS))
def test_self_started_workers_look_alike_clean(tmp_path: Path, how: str) -> None:
    script, *rest = LAUNCHERS[how]
    run = guard_program(tmp_path, str(HERE / script), "clean", *rest)
    assert run.code == 0, run.stderr[-3000:]
    assert run.report is None
    assert compared(run) >= 2  # the workers were guarded: both sums compared
    assert "mcjax-guard: processes 0, 1 of 2, " in run.stderr, run.stderr[-3000:]


def run_in_session(cmd: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """`cmd` in a session of its own; on timeout its whole process group (forks included) is
    killed and the test fails on the timeout rather than leaving processes behind."""
    import signal

    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"hung: {cmd} did not end in {timeout} s\n{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["workers", "children"])
def test_in_code_install_survives_forks_and_os_exit(tmp_path: Path, mode: str) -> None:
    """An in-code `install()`, no supervisor. "workers": multiprocessing fork workers leave through
    os._exit, process 1 first: its exit is published, not taken for a death (which stopped
    process 0 with a DIED report). "children": joined processes fork a child while a thread holds
    the recorder's lock; the child's lock is free (it hung) and its os._exit speaks for nobody."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    for k in (ENV, "MCJAX_SUPERVISED"):
        env.pop(k, None)
    run = run_in_session([sys.executable, str(HERE / "incode_fork.py"), mode], tmp_path, env, 200)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not re.search(r"mcjax-guard: [A-Z]+:", run.stderr), run.stderr[-3000:]  # no report
    if mode == "workers":
        assert "exit codes [0, 0]" in run.stdout, run.stdout
    else:
        assert sorted(re.findall(r"^(\d) child (-?\d+) done", run.stdout, re.M)) == [("0", "7"), ("1", "7")], run.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dash_n_on_a_program_that_starts_its_own_jobs_says_so_once(tmp_path: Path) -> None:
    """`mcjax-guard -n 2` on a program that starts its own 2-process job: 2 separate jobs whose
    processes share indices. Their workers stay unguarded (once, their states overwrote each
    other's), the run says so in one line, and the program runs to its own end."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop(ENV, None)
    cmd = [sys.executable, "-m", "runtime_guard", "-n", "2", "--report-dir", str(tmp_path / "reports"), "python",
           str(HERE / "launch_subprocess.py"), "clean"]
    run = run_in_session(cmd, tmp_path, env, 240)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if "starts its own JAX jobs" in line]
    assert len(lines) == 1 and "with -n 2" in lines[0] and "run it once without -n" in lines[0], run.stderr[-3000:]
    assert run.stderr.count("nothing compared") == 1, run.stderr[-3000:]
    assert run.stdout.count("total 4.0") == 2 and not (tmp_path / "reports" / "report.json").exists()


def test_separate_job_is_a_worker_below_an_n_launch_with_a_coordinator_of_its_own() -> None:
    from runtime_guard import local_job

    launch = {local_job.ADDR: "127.0.0.1:4000", local_job.SUPERVISOR: "1"}  # pid 1 is not our parent
    assert local_job.separate_job("127.0.0.1:5000", launch)
    assert local_job.separate_job("10.0.0.2:4000", launch)
    assert not local_job.separate_job("localhost:4000", launch)  # the launch's own job
    assert not local_job.separate_job("127.0.0.1:5000", {})  # no -n launch above
    root = dict(launch, **{local_job.SUPERVISOR: str(os.getppid())})
    assert not local_job.separate_job("127.0.0.1:5000", root)  # a process the launcher started


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_run_without_distributed_job_warns(tmp_path: Path) -> None:
    run = guard_program(tmp_path, str(HERE / "local_only.py"), timeout=150)
    assert run.code == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if "nothing compared" in line]
    assert len(lines) == 1 and "never joined" in lines[0], run.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_stopped_worker_is_frozen_not_dead(tmp_path: Path) -> None:
    """A worker stopped for 10 s (past the 4 s heartbeat limit) runs on: the supervisor notes the
    liveness of the program's own workers too, so no `died` report stops the job."""
    import signal

    env = dict(os.environ, JAX_PLATFORMS="cpu", WORKER_READY_DIR=str(tmp_path))
    env.pop(ENV, None)
    cmd = [sys.executable, "-m", "runtime_guard", "--report-dir", str(tmp_path / "reports"), "python",
           str(HERE / "launch_subprocess.py"), "steady"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
    try:
        ready = tmp_path / "ready-1"
        deadline = time.monotonic() + 150
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), proc.communicate(timeout=60)[0][-3000:]
        time.sleep(0.5)
        pid = int(ready.read_text())
        os.kill(pid, signal.SIGSTOP)
        time.sleep(10)
        os.kill(pid, signal.SIGCONT)
        out, _ = proc.communicate(timeout=200)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, out[-3000:]
    assert not (tmp_path / "reports" / "report.json").exists(), out[-3000:]


def test_summary_warns_when_workers_joined_but_compared_nothing() -> None:
    from runtime_guard.progress import summary

    states = {p: {"p": p, "n": 2, "seq": 0} for p in (0, 1)}
    assert summary(states, None, [0]) == ("mcjax-guard: processes 0, 1 of 2, no cross-process computation ran: "
                                          "nothing compared")


# -- the start-up hook, without JAX ------------------------------------------------------------------

def _hook_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", ENV)}
    env = workers.worker_env(env)
    env.update(extra)
    return env


def _base_interpreter() -> str:
    return getattr(sys, "_base_executable", sys.executable)


@pytest.mark.timeout(60)
def test_hook_is_a_no_op_without_the_guard_settings() -> None:
    code = "import sys; print(sorted(m for m in sys.modules if m.startswith(('runtime_guard', 'jax'))))"
    out = subprocess.run([sys.executable, "-c", code], env=_hook_env(), capture_output=True, text=True,
                         timeout=30, check=True)
    assert out.stdout.strip() == "[]", out


@pytest.mark.timeout(60)
def test_hook_arms_importing_nothing_and_base_interpreter_imports_the_install() -> None:
    # The base interpreter does not process the virtualenv's .pth files (an editable install's
    # finder lives there); the hook makes the install importable all the same.
    env = _hook_env(**{ENV: GuardSettings().to_env()})
    code = ("import sys; watching = any(getattr(f, 'mcjax_guard_watch', False) for f in sys.meta_path); "
            "loaded = sorted(m for m in sys.modules if m.startswith(('runtime_guard', 'jax'))); "
            "import runtime_guard.workers; print(watching, loaded)")
    out = subprocess.run([_base_interpreter(), "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True []", out


@pytest.mark.timeout(60)
def test_hook_runs_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    env = _hook_env(**{ENV: GuardSettings().to_env()})
    env["PYTHONPATH"] += os.pathsep + str(tmp_path)
    code = "import builtins; print(getattr(builtins, 'SHADOWED_RAN', False))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "True", out


@pytest.mark.timeout(60)
def test_forked_child_gets_its_own_flight_file(tmp_path: Path) -> None:
    """A fork shares its parent's flight mapping: after `detach_in_child` the child's records go to
    a file of its own (the parent's stays as it was), or nowhere for a fork outside the job."""
    code = textwrap.dedent(f"""
        import os, sys
        from runtime_guard import flight
        fr = flight.FlightRecorder({str(tmp_path)!r}, capacity=64)
        view = memoryview(fr.records)  # a holder of the ring's address, as the recorder is
        keep = sys.argv[1] == "keep"
        pid = os.fork()
        if pid == 0:
            fr.detach_in_child(keep_file=keep)
            view[fr.records_offset:fr.records_offset + 4] = b"KID!"
            os._exit(0)
        os.waitpid(pid, 0)
        mine = (flight.HEADER.size, bytes(view[fr.records_offset:fr.records_offset + 4]))
        theirs = {{}}
        for f in os.listdir({str(tmp_path)!r}):
            if f.startswith(f"flight-{{pid}}.") and f.endswith(".bin"):
                data = open(os.path.join({str(tmp_path)!r}, f), "rb").read()
                theirs = {{"pid": flight.HEADER.unpack_from(data, 0)[2], "rec": data[fr.records_offset:fr.records_offset + 4].decode()}}
        print(mine[1].decode() if mine[1].strip(b"\\0") else "-", theirs.get("pid") == pid, theirs.get("rec"))
    """)
    for mode, expected in (("keep", "- True KID!"), ("drop", "- False None")):
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected, (mode, out)


def test_descendants_finds_workers_below_the_supervisors_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])"])
    try:
        deadline = time.monotonic() + 20
        grandchild = None
        while grandchild is None and time.monotonic() < deadline:
            for pid in os.listdir("/proc"):
                if pid.isdigit() and workers._parent_pid(int(pid)) == child.pid:
                    grandchild = int(pid)
            time.sleep(0.05)
        assert grandchild is not None
        states = {0: {"pid": grandchild}, 1: {"pid": os.getpid()}, 2: {"pid": child.pid}}
        assert workers.descendants(states, {child.pid}) == {grandchild: 0}
    finally:
        child.kill()
        child.wait(timeout=10)
        if grandchild is not None:
            try:
                os.kill(grandchild, 9)
            except OSError:
                pass
