"""Strict mode, configuration agreement and the in-code API, on real local JAX processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from runtime_guard.launcher import free_port
from runtime_guard.settings import ENV, EXIT_DETECTED, GuardSettings
from tests.guard.conftest import PROGRAMS, site_markers


def test_strict_mode_raises_in_every_process_before_the_collective(guard_run):
    program = PROGRAMS / "hazard_rank0_jit.py"
    run = guard_run(program, "--mode", "strict")
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    # Both processes raised DivergenceError from the guard's check, not from a failed collective.
    assert run.stderr.count("runtime_guard.guard.DivergenceError") == 2, run.stderr[-6000:]
    assert "Gloo" not in run.stderr.split("DivergenceError")[0]
    report = run.report
    assert report["kind"] == "divergence" and report["guard"]["mode"] == "strict"
    assert {"name", "program"} <= set(report["differing_fields"])
    for index, line in site_markers(program).items():
        assert run.process(index)["location"]["line"] == line
        assert run.process(index)["status"] == "diverged"
    # Neither process was killed by a signal (gloo aborts on mismatched collectives).
    assert all(p.get("exit_code") in (None, 0, 1) for p in report["processes"])


def test_strict_mode_clean_program(guard_run):
    run = guard_run(PROGRAMS / "clean_last_batch.py", "--mode", "strict")
    assert run.code == 0, run.stderr[-4000:]
    assert not run.report_dir.exists()


def _spawn(script: Path, n: int, settings: list[GuardSettings], tmp_path: Path) -> list[subprocess.Popen]:
    port = free_port()
    procs = []
    for i in range(n):
        env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1", PORT=str(port), PID=str(i), N=str(n),
                   XLA_FLAGS="--xla_cpu_collective_timeout_seconds=30")
        env[ENV] = settings[i].to_env()
        env.pop("MCJAX_SUPERVISED", None)
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def _collect(procs: list[subprocess.Popen], timeout: float = 120) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        out.append((p.returncode, err))
    return out


IN_CODE = textwrap.dedent('''
    import os, sys
    import runtime_guard
    runtime_guard.install()  # settings from the environment, as a user could pass them in code
    import jax, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    jax.distributed.initialize(f"127.0.0.1:{os.environ['PORT']}", int(os.environ["N"]), int(os.environ["PID"]))
    mesh = Mesh(np.array(jax.devices()), ("x",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones((2, 3), np.float32))

    @jax.jit
    def total(a):
        return a.sum()

    @jax.jit
    def biggest(a):
        return a.max()

    for i in range(3):
        y = total(x) if jax.process_index() == 0 or i < 2 else biggest(x)
        y.block_until_ready()
    print("finished", y)
''')


def test_in_code_install_reports_and_stops_without_a_supervisor(tmp_path):
    # The "same wrong answer" case: sum on one process, max on the other, collectives line up.
    script = tmp_path / "prog.py"
    script.write_text(IN_CODE)
    reports = tmp_path / "reports"
    s = GuardSettings(report_dir=str(reports))
    results = _collect(_spawn(script, 2, [s, s], tmp_path))
    codes = [c for c, _ in results]
    assert codes == [EXIT_DETECTED, EXIT_DETECTED], results
    report = json.loads((reports / "report.json").read_text())
    assert report["kind"] == "divergence" and report["seq"] is not None
    names = {p["process_index"]: p["dispatch"]["name"] for p in report["processes"]}
    assert names == {0: "jit(total)", 1: "jit(biggest)"}, names
    # Each process printed the report (no supervisor to do it).
    assert all("DIVERGENCE" in err for _, err in results)


def test_divergence_before_exit_is_reported_when_a_peer_reaches_exit_late(tmp_path):
    # The last dispatches differ and one process reaches its exit seconds after the other (host
    # work after the loop; under CPU load a starved process does the same): the exit-time
    # comparison must wait for it instead of giving up after a fixed few seconds. A long publish
    # interval keeps the late process's records unpublished until it leaves, as starvation does.
    script = tmp_path / "prog.py"
    script.write_text(IN_CODE.replace('print("finished", y)',
                                      'import time\nif jax.process_index() == 1:\n    time.sleep(6)\nprint("finished", y)'))
    reports = tmp_path / "reports"
    s = GuardSettings(report_dir=str(reports), interval=10.0)
    results = _collect(_spawn(script, 2, [s, s], tmp_path))
    assert [c for c, _ in results] == [EXIT_DETECTED, EXIT_DETECTED], results
    report = json.loads((reports / "report.json").read_text())
    assert report["kind"] == "divergence"
    names = {p["process_index"]: p["dispatch"]["name"] for p in report["processes"]}
    assert names == {0: "jit(total)", 1: "jit(biggest)"}, names


def test_settings_must_agree_across_processes(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(IN_CODE)
    results = _collect(_spawn(script, 2, [GuardSettings(mode="fast"), GuardSettings(mode="strict")], tmp_path))
    for code, err in results:
        assert code != 0
        assert "guard settings differ between processes: process 1 has mode='strict' but process 0 has mode='fast'" in err


def test_program_without_distributed_runs_unguarded_and_unharmed(guard_run, tmp_path):
    # No jax.distributed.initialize(): nothing to compare; the program must run as without the guard.
    script = tmp_path / "single.py"
    script.write_text("import jax, jax.numpy as jnp\nprint('sum', float(jax.jit(jnp.sum)(jnp.arange(4.0))))\n")
    run = guard_run(script)
    assert run.code == 0, run.stderr[-3000:]
    assert run.stdout.count("sum 6.0") == 2
    assert not run.report_dir.exists()


def test_program_exit_status_is_passed_through(guard_run, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(3)\n")
    run = guard_run(script)
    assert run.code == 3, run.stderr[-3000:]
    assert not run.report_dir.exists()
