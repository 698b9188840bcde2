"""Across hosts there is no local supervisor to see a process die: the others name it from its
missing heartbeats. Real unsupervised processes (each installs the guard in code, as one per host
would), one of them SIGKILLed as by the OOM killer."""

from __future__ import annotations

import json
import textwrap
import time

from runtime_guard.settings import EXIT_DETECTED, GuardSettings
from tests.guard.test_modes import _collect, _spawn

PROGRAM = textwrap.dedent('''
    import os, signal, time
    import runtime_guard
    runtime_guard.install()
    import jax, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    jax.distributed.initialize(f"127.0.0.1:{os.environ['PORT']}", int(os.environ["N"]), int(os.environ["PID"]))
    mesh = Mesh(np.array(jax.devices()), ("x",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones((2, 3), np.float32))
    step = jax.jit(lambda a: a.sum())
    for i in range(400):
        if jax.process_index() == 1 and i == 40:
            print("killed at", time.time(), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        step(x).block_until_ready()
        time.sleep(0.02)
    print("finished", flush=True)
''')


def test_a_killed_process_is_named_from_its_missing_heartbeats(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    reports = tmp_path / "reports"
    s = GuardSettings(report_dir=str(reports))
    t0 = time.time()
    procs = _spawn(script, 2, [s, s], tmp_path)
    results = _collect(procs, timeout=90)
    (code0, err0), (code1, _) = results
    assert code1 == -9, results
    assert code0 == EXIT_DETECTED, err0[-4000:]
    report = json.loads((reports / "report.json").read_text())
    assert report["kind"] == "died", report["summary"]
    assert report["summary"].startswith("process 1 stopped sending heartbeats"), report["summary"]
    dead = next(p for p in report["processes"] if p["process_index"] == 1)
    # Its last published dispatch: at most one publish interval (0.25 s, ~10 steps) before the kill.
    assert dead["status"] == "died" and 25 <= dead["last_seq"] <= 41, dead
    # Named after --died-after (4 s) of silence, well before JAX's own 100 s heartbeat timeout.
    assert report["created"] - t0 < 45, report["created"] - t0
