"""Computations over a subset of the processes (sub-meshes: pipeline stages), in real 4-process
JAX programs under mcjax-guard. Each subset's computations are numbered and compared among its
members only: stages that run different programs are correct, a stage whose members disagree is
not, whatever the rest of the job does.
"""

from __future__ import annotations

import textwrap

import pytest

from runtime_guard.settings import EXIT_DETECTED

HEADER = '''
import sys, time
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
me = jax.process_index()
stage = me // 2
stage_mesh = Mesh(np.array([d for d in jax.devices() if d.process_index // 2 == stage]), ("data",))
stage_sharding = NamedSharding(mesh=stage_mesh, spec=P("data"))
world = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), P("data"))

encode = jax.jit(lambda x: jnp.sum(jnp.tanh(x)))       # stage 0's program
decode = jax.jit(lambda x: jnp.max(x * 2) + 1.0)       # stage 1's program
sync = jax.jit(lambda x: jnp.mean(x))                  # every process

def local(v, sharding):
    return jax.make_array_from_process_local_data(sharding, np.full((1, 4), v, np.float32))
'''


def _program(tmp_path, body: str):
    p = tmp_path / "pipeline.py"
    p.write_text(HEADER + textwrap.dedent(body))
    return p


@pytest.mark.parametrize("mode", ["fast", "strict"])
def test_stages_running_different_programs_are_not_a_divergence(tmp_path, guard_run, mode):
    # Stage 0 runs `encode`, stage 1 `decode`, both between whole-job `sync`s: every stream agrees
    # among its own members (in strict mode, each stage's members meet at their own barriers).
    prog = _program(tmp_path, """
        for step in range(12):
            x = local(step, stage_sharding)
            r = encode(x) if stage == 0 else decode(x)
            jax.block_until_ready(r)
            if step % 4 == 3:
                jax.block_until_ready(sync(local(step, world)))
        print("done", me, flush=True)
    """)
    run = guard_run(prog, "--mode", mode, n=4)
    assert run.code == 0, run.stderr[-4000:]
    assert run.stdout.count("done") == 4
    assert not run.report_dir.exists(), run.report
    assert not run.guard_messages, run.stderr[-3000:]


def test_a_process_leaving_its_stage_early_is_named(tmp_path, guard_run):
    # Process 3 leaves the loop after 3 steps; process 2, its only partner, goes on to its 4th
    # computation over processes 2 and 3 (and would wait there for the collective timeout). Stage 0
    # and the whole-job stream are fine.
    prog = _program(tmp_path, """
        for step in range(20):
            if me == 3 and step == 3:
                break
            x = local(step, stage_sharding)
            r = encode(x) if stage == 0 else decode(x)
            jax.block_until_ready(r)
            time.sleep(0.05)
    """)
    run = guard_run(prog, n=4)
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    rep = run.report
    assert rep is not None and rep["kind"] == "exited", rep and rep["summary"]
    assert "process 3" in rep["summary"] and "processes 2 and 3" in rep["summary"], rep["summary"]
    assert rep["seq"] == 4, rep["summary"]
    assert run.process(3)["status"] == "exited"


def test_a_stage_member_that_never_joins_is_missing(tmp_path, guard_run):
    # Process 3 gets stuck (a dead mount, say) before its 4th computation over processes 2 and 3;
    # process 2 dispatches it and waits in the collective. Stage 0 finishes normally, and no
    # computation spans every process: only the subset's stream tells who is behind.
    prog = _program(tmp_path, """
        for step in range(6):
            if me == 3 and step == 3:
                time.sleep(600)
            x = local(step, stage_sharding)
            r = encode(x) if stage == 0 else decode(x)
            jax.block_until_ready(r)
    """)
    run = guard_run(prog, "--timeout", "4", n=4)
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    rep = run.report
    assert rep is not None and rep["kind"] == "missing", rep and rep["summary"]
    assert "process 3 never joined dispatch #4 over processes 2 and 3" in rep["summary"], rep["summary"]
    assert run.process(3)["status"] == "never-joined"
    assert run.seconds < 60


def test_a_stage_member_killed_is_named_with_its_last_stage_dispatch(tmp_path, guard_run):
    # Process 3 is killed (the OOM killer, say) after its 5th computation over processes 2 and 3;
    # no computation spans every process. The supervisor reads the stage's stream from the flight
    # files: who died after what, and who will wait for it.
    prog = _program(tmp_path, """
        import os, signal
        for step in range(30):
            x = local(step, stage_sharding)
            r = encode(x) if stage == 0 else decode(x)
            jax.block_until_ready(r)
            if me == 3 and step == 4:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.1)
    """)
    run = guard_run(prog, n=4)
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    rep = run.report
    assert rep is not None and rep["kind"] == "died", rep and rep["summary"]
    assert "process 3 died (SIGKILL) after dispatch #5 over processes 2 and 3" in rep["summary"], rep["summary"]
    assert "process 2 will wait for it" in rep["summary"], rep["summary"]
    dead = run.process(3)
    assert dead["status"] == "died" and dead["dispatch"]["seq"] == 5, dead
    assert dead["location"]["file"].endswith("pipeline.py") and "decode(x)" in dead["location"]["source"], dead


def test_strict_mode_stops_a_stage_before_its_mismatched_collective(guard_run):
    # Strict mode: the members of a subset meet at a barrier of their own stream before each
    # computation over it; processes 0 and 1 about to run different ones never meet, and raise.
    from tests.guard.conftest import PROGRAMS, site_markers

    program = PROGRAMS / "hazard_stage_divergence.py"
    run = guard_run(program, "--mode", "strict")
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.stderr.count("runtime_guard.guard.DivergenceError") >= 2, run.stderr[-6000:]
    rep = run.report
    assert rep["kind"] == "divergence" and rep["guard"]["mode"] == "strict", rep["summary"]
    assert rep["summary"].startswith("processes 0 and 1 (a sub-mesh)"), rep["summary"]
    for index, line in site_markers(program).items():
        assert run.process(index)["location"]["line"] == line
        assert run.process(index)["status"] == "diverged"


PROGRAMS_HERE = __import__("pathlib").Path(__file__).parent / "programs"


@pytest.mark.parametrize("program,mode", [
    ("subset_first_call_compiles_slowly.py", "fast"),
    ("subset_two_jits_share_executables.py", "fast"),
    ("subset_moved_record_then_compile.py", "fast"),
    ("subset_one_wrapper_many_meshes.py", "strict"),
    ("subset_then_whole_job_learned.py", "fast"),
], ids=lambda v: v.removesuffix(".py") if isinstance(v, str) else v)
def test_correct_sub_mesh_programs_leave_no_report(program, mode, guard_run):
    # Each of these once drew a false report (found in review): see the programs' docstrings.
    run = guard_run(PROGRAMS_HERE / program, "--mode", mode, n=4)
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert run.stdout.count("done") == 4
    assert not run.report_dir.exists(), run.report
