"""Resident memory of every process over many cross-process dispatches, unguarded vs guarded.

Starts N real local JAX processes (CPU, 1 device each, loopback coordinator) once per variant, in
the order given (default: unguarded, fast, unguarded, fast: alternating, against drift). In each
process: `--warm` dispatches first (JAX's and the allocator's own first growth, unguarded too),
then `--dispatches` more of a cached cross-process jit (a column sum of a sharded global array: an
all-reduce over gloo), waited for every 16; resident memory (/proc/self/statm) is read before and
after the measured dispatches. `idle` is the guard installed and the process asleep for `--idle`
seconds instead of dispatching (growth with time rather than with dispatches: the exchange
threads). With `--tracemalloc` each process also reports the Python heap's growth over the
measured part (tells Python-side growth apart from native).

    python benchmarks/guard_rss.py [--processes 2] [--dispatches 100000] [--variants unguarded,fast,unguarded,fast]
    python benchmarks/guard_rss.py --variants fast@HEAD~1,fast,fast@HEAD~1,fast   # a variant at a git revision

Prints, per variant run, every process's RSS growth in MB and the seconds the measured part took.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def worker(pid: int, n: int, port: int, variant: str, dispatches: int, warm: int, idle: float,
           trace: bool) -> dict:
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    import runtime_guard
    from runtime_guard.settings import GuardSettings

    if variant != "unguarded":
        runtime_guard.install(GuardSettings(mode="fast" if variant == "idle" else variant, quiet=True,
                                            state_dir=tempfile.mkdtemp()))
    jax.distributed.initialize(f"127.0.0.1:{port}", n, pid)
    mesh = Mesh(np.array(jax.devices()), ("d",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("d")), np.ones((64, 32), np.float32))
    f = jax.jit(lambda a: (a * 2.0).sum(axis=0))

    def run(k: int) -> None:
        out = None
        for i in range(k):
            out = f(x)
            if i % 16 == 15:
                jax.block_until_ready(out)
        jax.block_until_ready(out)

    run(warm)
    if trace:
        import tracemalloc

        tracemalloc.start(8)
        snap0 = tracemalloc.take_snapshot()
    before = _rss_mb()
    t = time.perf_counter()
    curve = []  # growth after each tenth of the measured part
    for _ in range(10):
        if variant == "idle":
            time.sleep(idle / 10)
        else:
            run(dispatches // 10)
        curve.append(round(_rss_mb() - before, 2))
    secs = time.perf_counter() - t
    out: dict = {"rss": _rss_mb() - before, "secs": secs, "rss_end": _rss_mb(), "curve": curve}
    if trace:
        snap1 = tracemalloc.take_snapshot()
        stats = snap1.compare_to(snap0, "traceback")
        out["py_heap"] = sum(s.size_diff for s in stats) / 1e6
        out["py_top"] = [f"{s.size_diff / 1e3:+.1f} kB {s.count_diff:+d}: " + " < ".join(
            f"{fr.filename.rsplit('/', 2)[-1]}:{fr.lineno}" for fr in s.traceback[-4:]) for s in stats[:6]]
        tracemalloc.stop()
    # Every process waits for the others before leaving (a process leaving early looks like an exit).
    jax.block_until_ready(f(x))
    return out


def tree_at(rev: str) -> str:
    """A directory holding `runtime_guard/` as it is at git revision `rev` (with this checkout's C
    hot path build: the revision's Python runs over it, the C source must be the same)."""
    root = Path(__file__).resolve().parents[1]
    dest = Path(tempfile.mkdtemp())
    data = subprocess.run(["git", "archive", rev, "runtime_guard"], cwd=root, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(dest)  # noqa: S202  (our own repository's archive)
    for so in (root / "runtime_guard").glob("_hotpath*.so"):
        shutil.copy(so, dest / "runtime_guard" / so.name)
    return str(dest)


def run_job(a: argparse.Namespace, variant: str) -> list[dict]:
    from runtime_guard.launcher import free_port

    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1",
               XLA_FLAGS="--xla_cpu_collective_timeout_seconds=120")
    variant, _, rev = variant.partition("@")
    if rev:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree_at(rev), env.get("PYTHONPATH", "")]))
    cmd = [sys.executable, __file__, "--worker", "0", "--processes", str(a.processes), "--port", str(port),
           "--dispatches", str(a.dispatches), "--warm", str(a.warm), "--idle", str(a.idle), "--variants", variant]
    if a.tracemalloc:
        cmd.append("--tracemalloc")
    procs = []
    for i in range(a.processes):
        cmd[3] = str(i)
        procs.append(subprocess.Popen(list(cmd), env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=a.timeout)[0] for p in procs]
    res = [json.loads(line[7:]) for o in outs for line in o.splitlines() if line.startswith("RESULT ")]
    if len(res) != a.processes:
        sys.exit(f"a worker failed ({variant})")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--dispatches", type=int, default=100_000)
    ap.add_argument("--warm", type=int, default=20_000)
    ap.add_argument("--idle", type=float, default=10.0,
                    help="seconds asleep in the `idle` variant (under the guard's 20 s no-progress threshold)")
    ap.add_argument("--variants", default="unguarded,fast,unguarded,fast")
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--curve", action="store_true", help="print each process's growth after every tenth")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        r = worker(a.worker, a.processes, a.port, a.variants, a.dispatches, a.warm, a.idle, a.tracemalloc)
        print("RESULT " + json.dumps(r), flush=True)
        return
    print(f"mcjax guard resident memory: {a.processes} processes x 1 CPU device, {a.dispatches} measured "
          f"dispatches after {a.warm} of warm-up; load average {os.getloadavg()[0]:.2f}")
    for variant in a.variants.split(","):
        res = run_job(a, variant)
        cells = "  ".join(f"p{i} {r['rss']:+6.2f} MB" for i, r in enumerate(res))
        print(f"{variant:<10} {cells}   ({res[0]['secs']:.1f} s, p0 RSS {res[0]['rss_end']:.0f} MB)", flush=True)
        for i, r in enumerate(res):
            if a.curve:
                print(f"    p{i} MB after each tenth: " + " ".join(f"{v:+.2f}" for v in r["curve"]))
            if "py_heap" in r:
                print(f"    p{i} Python heap {r['py_heap']:+.2f} MB; top: " + "; ".join(r["py_top"][:3]))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
