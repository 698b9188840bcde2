"""The guard's hot path now vs at another git revision, side by side in one process.

    python benchmarks/guard_hot_path_compare.py --against 26eed83 [--rounds 7] [--calls 20000] [--no-dispatch]

Extracts `runtime_guard/` at the given revision into a temporary directory under another package
name, then times, alternating call by call in one loop (the two guards swapping places every call): a
cached jit call on JAX's C++ fast path (raw), the same call through the old revision's jit wrapper,
and through the current one — each
recording the call exactly as a cross-process dispatch, with a flight file, as `mcjax-guard` runs
it. Prints the median per call for every round and the median added cost of each. Ratios between
the two guards are what to read: this machine's speed drifts by ±30% within minutes. The C hot
path is not committed but built: the revision gets this checkout's build when its `_hotpath.c` is
the same, else its own is built (or, without a compiler, it runs its Python path, and the script
says so).

`--no-dispatch` puts a Python stand-in that returns a ready array where the jit call would be, in
the raw column and inside both wrappers: what is left is the guard's own Python cost, without
JAX's asynchronous execution running on the other core beside it (which makes any Python work
in a tight dispatch loop cost more than it does alone).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def extract(rev: str, dest: Path) -> str:
    """`runtime_guard/` at `rev` as package `runtime_guard_at_rev` under `dest`."""
    name = "runtime_guard_at_rev"
    data = subprocess.run(["git", "archive", rev, "runtime_guard"], cwd=ROOT, capture_output=True, check=True).stdout
    tar = dest / "rg.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as t:
        try:
            t.extractall(dest, filter="data")
        except TypeError:  # Python without extraction filters (our own repository's archive)
            t.extractall(dest)  # noqa: S202
    pkg = dest / "runtime_guard"
    for p in pkg.rglob("*.py"):
        p.write_text(re.sub(r"\bruntime_guard\b", name, p.read_text()))
    # The C hot path is built, not committed: give the revision this checkout's build when its C
    # source is the same (the module's init name does not depend on the package), else build its
    # own with the flags setuptools uses for this one; where that fails it runs its Python path,
    # and the comparison says so.
    same_c = (pkg / "_hotpath.c").exists() and subprocess.run(
        ["git", "diff", "--quiet", rev, "--", "runtime_guard/_hotpath.c"], cwd=ROOT).returncode == 0
    built = [p for suffix in importlib.machinery.EXTENSION_SUFFIXES  # this interpreter's build
             for p in sorted((ROOT / "runtime_guard").glob(f"_hotpath{suffix}"))]
    if same_c and built:
        shutil.copy(built[0], pkg / built[0].name)
    elif (pkg / "_hotpath.c").exists():
        try:
            build_extension(pkg / "_hotpath.c", pkg, dest / "build")
            print(f"note: {rev}'s C hot path differs from this checkout's: built it")
        except Exception as e:  # no compiler: compare with its Python path
            print(f"note: {rev}'s C hot path differs and could not be built ({e!r}): it runs its Python path")
    pkg.rename(dest / name)
    sys.path.insert(0, str(dest))
    return name


def build_extension(source: Path, out_dir: Path, temp: Path) -> None:
    """Compile `source` as module `_hotpath` into `out_dir`, as `pip install` builds this checkout's."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    cmd = build_ext(Distribution({"ext_modules": [Extension("_hotpath", [str(source)])]}))
    cmd.build_lib, cmd.build_temp = str(out_dir), str(temp)
    cmd.ensure_finalized()
    cmd.run()


def wrapper(guard_mod, settings_mod, x, stand_in=None):
    import jax

    g = guard_mod.Guard(settings_mod.GuardSettings(quiet=True, state_dir=tempfile.mkdtemp()))
    g.active, g.num_processes = True, 1
    w = guard_mod.GuardedJit(jax.jit(lambda a: a * 2.0 + 1.0), g)
    jax.block_until_ready(w(x))
    w._kind = guard_mod._MULTI  # record every call, as for a cross-process computation
    if stand_in is not None:
        w._jitted = stand_in
    return w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", required=True, help="git revision to compare with")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--no-dispatch", action="store_true", help="time the wrappers around a stand-in, not a jit call")
    a = ap.parse_args()

    import importlib

    import jax
    import jax.numpy as jnp

    import runtime_guard.guard as new_guard
    import runtime_guard.settings as new_settings

    name = extract(a.against, Path(tempfile.mkdtemp()))
    old_guard = importlib.import_module(f"{name}.guard")
    old_settings = importlib.import_module(f"{name}.settings")

    x = jnp.ones((64, 32), jnp.float32)
    raw = jax.jit(lambda a: a * 2.0 + 1.0)
    out = raw(x)
    stand_in = (lambda *args, **kwargs: out) if a.no_dispatch else None
    if stand_in is not None:
        raw = stand_in
    fs = [raw, wrapper(old_guard, old_settings, x, stand_in), wrapper(new_guard, new_settings, x, stand_in)]
    clock = time.perf_counter_ns
    rounds = []
    print(f"hot path per dispatch, µs (median per call; {a.calls} calls a round, calls alternating)")
    for r in range(a.rounds):
        ts: list[list[int]] = [[] for _ in fs]
        for i in range(a.calls):
            # The two guards swap places every call: the one timed right after the other gets a
            # warmer cache (measured: ~10% between two copies of the same code in a fixed order).
            for j in (0, 1, 2) if i & 1 else (0, 2, 1):
                t0 = clock()
                o = fs[j](x)
                ts[j].append(clock() - t0)
            if i % 64 == 63:
                jax.block_until_ready(o)  # keep the execution queue short
        m = [statistics.median(t) / 1e3 for t in ts]
        rounds.append(m)
        print(f"round {r + 1}: raw {m[0]:.2f}  at {a.against} {m[1]:.2f} (+{m[1] - m[0]:.2f})  now {m[2]:.2f} (+{m[2] - m[0]:.2f})")
    old = statistics.median(m[1] - m[0] for m in rounds)
    new = statistics.median(m[2] - m[0] for m in rounds)
    print(f"added per dispatch (median of {a.rounds} rounds): at {a.against} {old:.2f} µs, now {new:.2f} µs; "
          f"now / then {new / old:.2f}")


if __name__ == "__main__":
    main()
