"""Where the guard's hot-path time goes, part by part, on this machine's Python and JAX.

    python benchmarks/guard_hot_path_parts.py [--n 200000] [--repeat 5]

Times, each in its own tight loop (best of `--repeat`, per call in ns): a cached jit call on
JAX's C++ fast path; the same call through the least Python wrapper that can exist
(`lambda *a, **k: f(*a, **k)`); the guard's wrapper on its hot path (recording the call as a
cross-process dispatch, with a flight file); and each step the hot path takes, alone. The parts
do not add up to the whole exactly (loop and call overheads differ); they say which step costs
what on a given interpreter, e.g. when the hot path costs more on another machine. The parts are
the Python path's; where the C hot path is built, the guarded call uses it, and the same call on
the Python path is timed beside it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def getframe_ns(n: int = 100000) -> float:
    """`sys._getframe` per call: an audit hook (PEP 578) installed by an import makes it, and
    `frame.f_code`, call that hook."""
    g = sys._getframe
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            g(0)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main() -> None:
    before = getframe_ns()
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()

    import jax
    import jax.numpy as jnp

    from runtime_guard import compat
    from runtime_guard import guard as gmod
    from runtime_guard.settings import GuardSettings

    g = gmod.Guard(GuardSettings(quiet=True, state_dir=tempfile.mkdtemp()))
    g.active, g.num_processes = True, 1
    x = jnp.ones((64, 32), jnp.float32)
    raw = jax.jit(lambda v: v * 2.0 + 1.0)
    guarded = gmod.GuardedJit(jax.jit(lambda v: v * 2.0 + 1.0), g)
    jax.block_until_ready((raw(x), guarded(x)))
    guarded._kind = gmod._MULTI
    python_path = gmod.GuardedJit(jax.jit(lambda v: v * 2.0 + 1.0), g)
    jax.block_until_ready(python_path(x))
    python_path._kind, python_path._hp = gmod._MULTI, None  # without the C hot path
    def bare(*args, **kw):
        return raw(*args, **kw)

    out = raw(x)
    arg_shapes = compat.make_arg_shapes()
    frame = sys._getframe()
    key = (id(frame.f_code) << 32) | frame.f_lasti
    g._sites[key] = g.site_of_frame(frame)
    site, line = g._sites[key]
    rec = g.recorder
    getframe = sys._getframe
    n = a.n

    def loop_jit(f):
        for _ in range(n // 64):
            for _ in range(64):
                r = f(x)
            r.block_until_ready()

    def best(fn, *args) -> float:
        ts = []
        for _ in range(a.repeat):
            t0 = time.perf_counter_ns()
            fn(*args)
            ts.append(time.perf_counter_ns() - t0)
        return min(ts) / n

    def empty():
        for _ in range(n):
            pass

    def frame_site():
        for _ in range(n):
            f = getframe(0)
            g._sites.get((id(f.f_code) << 32) | f.f_lasti)

    def shapes():
        args = (x,)
        for _ in range(n):
            arg_shapes(args)

    def record():
        for _ in range(n):
            rec.record_at(12345, 0, site, line)

    def concrete():
        for _ in range(n):
            compat.concrete_result(out)

    def in_trace():
        for _ in range(n):
            compat.in_trace_or_disabled_jit()

    def registry():
        names = g.registry.names
        for _ in range(n):
            _ = 12345 in names

    loop = best(empty)
    rows = [
        ("jit call, raw (C++ fast path)", best(loop_jit, raw)),
        ("jit call through a bare *args wrapper", best(loop_jit, bare)),
        (f"jit call through the guard ({'C hot path' if guarded._hp is not None else 'Python path'})",
         best(loop_jit, guarded)),
        ("jit call through the guard (Python path)", best(loop_jit, python_path)),
        ("  frame + call-site cache lookup", best(frame_site) - loop),
        ("  argument shape hash (1 array)", best(shapes) - loop),
        ("  registry lookup", best(registry) - loop),
        ("  recorder.record_at (lock, clock, pack)", best(record) - loop),
        ("  result is concrete?", best(concrete) - loop),
        ("  (trace state, when not concrete)", best(in_trace) - loop),
    ]
    print(f"Python {sys.version.split()[0]}, JAX {jax.__version__}, {jax.devices()[0].platform}; "
          f"best of {a.repeat} loops of {n}; ns per call")
    after = getframe_ns()
    hook = " (an import installed an audit hook: every sys._getframe and frame.f_code calls it)" if after > 3 * before else ""
    print(f"sys._getframe: {before:.0f} ns before importing jax, {after:.0f} ns after{hook}")
    for label, ns in rows:
        print(f"{label:<44} {ns:8.0f}")
    r, b, gd = rows[0][1], rows[1][1], rows[2][1]
    print(f"guard adds {gd - r:.0f} ns per dispatch ({rows[3][1] - r:.0f} on the Python path); "
          f"a bare wrapper adds {b - r:.0f} ns")


if __name__ == "__main__":
    main()
