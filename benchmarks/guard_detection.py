"""How fast the guard names a problem: from the event to the written report.

Runs real local processes under `mcjax-guard -n 2` and measures, per scenario, the time from the
moment of the event (the program writes `time.time()` just before it) to the report's `created`
time (written by the supervisor before it stops anything):
  - divergence: process 1 runs `max` where process 0 runs `sum`; the collectives line up, so
    nothing hangs or crashes: without the guard both would return the same wrong number forever;
  - exited:     process 0 leaves the training loop early, process 1 goes on;
  - killed:     process 1 is SIGKILLed (as by the OOM killer) mid-run.
Both modes for the divergence. Prints the median and range over --repeats runs.

    python benchmarks/guard_detection.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent('''
    import os, signal, time
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    jax.distributed.initialize()
    SCENARIO, OUT, EVENT = os.environ["SCENARIO"], os.environ["EVENT_FILE"], 40
    me = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("d",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("d")), np.arange(6, dtype=np.float32).reshape(2, 3))

    @jax.jit
    def total(a):
        return a.sum()

    @jax.jit
    def biggest(a):
        return a.max()

    def mark():
        with open(OUT, "w") as f:
            f.write(repr(time.time()))

    for step in range(400):
        f = total
        if step == EVENT and me == 1 and SCENARIO == "divergence":
            mark()
            f = biggest
        if step == EVENT and me == 0 and SCENARIO == "exited":
            mark()
            break
        if step == EVENT and me == 1 and SCENARIO == "killed":
            mark()
            os.kill(os.getpid(), signal.SIGKILL)
        f(x).block_until_ready()
        time.sleep(0.01)
''')


def run(scenario: str, mode: str, work: Path) -> tuple[float, str]:
    prog = work / "prog.py"
    prog.write_text(PROGRAM)
    event, reports = work / f"event-{scenario}-{mode}", work / f"reports-{scenario}-{mode}"
    for p in (event,):
        p.unlink(missing_ok=True)
    env = dict(os.environ, SCENARIO=scenario, EVENT_FILE=str(event))
    cmd = [sys.executable, "-m", "runtime_guard", "-n", "2", "--devices-per-process", "1", "--mode", mode,
           "--collective-timeout", "60",
           "--report-dir", str(reports), "python", str(prog)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    rep = reports / "report.json"
    if not rep.exists() or not event.exists():
        raise RuntimeError(f"{scenario}/{mode}: no report (exit {out.returncode}): {out.stderr[-2000:]}")
    report = json.loads(rep.read_text())
    return report["created"] - float(event.read_text()), report["kind"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"mcjax guard detection latency: 2 local processes, 1 CPU device each, {a.repeats} runs each")
    print(f"{'scenario':<12} {'mode':<7} {'kind':<11} {'median s':>9} {'min s':>7} {'max s':>7}")
    with tempfile.TemporaryDirectory() as d:
        for scenario, mode in (("divergence", "fast"), ("divergence", "strict"), ("exited", "fast"), ("killed", "fast")):
            times, kinds = [], set()
            for _ in range(a.repeats):
                t, kind = run(scenario, mode, Path(d))
                times.append(t)
                kinds.add(kind)
            print(f"{scenario:<12} {mode:<7} {','.join(sorted(kinds)):<11} {statistics.median(times):9.2f} "
                  f"{min(times):7.2f} {max(times):7.2f}")


if __name__ == "__main__":
    main()
