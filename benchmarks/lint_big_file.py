"""Lint time of one very large generated file: does the cost grow with lines × branches?

Generates a realistic training module of N lines with one process-dependent branch every
~100 lines (as in issue 19: a 60k-line file with 600 such branches): many small functions, each
with a rank-0 branch around a jitted call (a hazard) or around logging (correct), loops and
dict plumbing in between, helpers that call one another, and one huge function (a quarter of the
lines) that holds a quarter of the branches. Then lints it with the real command line
(`python -m mcjax_lint --no-cache --jobs 1`, in a subprocess, `max-file-size` raised) and prints
wall and CPU seconds, the `--timings` phases and the findings; `--against DIR` runs another
checkout's code on the same file in the same invocation.

    python benchmarks/lint_big_file.py                       # 15k, 30k, 60k lines
    python benchmarks/lint_big_file.py --against /path/to/main/checkout   # side by side
    python benchmarks/lint_big_file.py --lines 60000 --profile 25   # cProfile, top 25 by own time
    python benchmarks/lint_big_file.py --write /tmp/big.py --lines 60000   # only write the file

The time per line should stay about the same from 15k to 60k lines (linear); the figures are
in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
T = time.process_time  # CPU seconds: the machine is shared, wall time says little
sys.path.insert(0, str(HERE.parent))

HEADER = '''"""Generated training module (benchmarks/lint_big_file.py)."""

import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

log = logging.getLogger(__name__)
mesh = Mesh(np.array(jax.devices()), ("data",))
data_sharding = NamedSharding(mesh, P("data"))
RANK = jax.process_index()


@jax.jit
def train_step(params, batch):
    grads = jax.grad(lambda p: jnp.mean((batch["x"] @ p - batch["y"]) ** 2))(params)
    return params - 1e-3 * grads


@jax.jit
def eval_step(params, batch):
    return {"mse": jnp.mean((batch["x"] @ params - batch["y"]) ** 2)}


def is_main():
    return jax.process_index() == 0

'''

# A block of ordinary host code (no process dependence), commented and spaced as real code is
# (libcst's parse costs per token: the density of flax's own modules, ~80 µs a line here).
FILLER = '''
    # Running statistics of this block's items, clipped to the limit (block {k}).
    stats_{k} = {{"seen": 0, "total": 0.0}}
    for position, item in enumerate(items):
        value = item * scale + offset
        if value > limit:
            value = limit

        stats_{k}["seen"] += 1
        stats_{k}["total"] += float(value)

    # The offset drifts with what was seen; the scale never falls below one.
    offset = offset + stats_{k}["seen"] * 0.5
    scale = max(scale, 1.0)
'''

DOCSTRING = '''    """One stage of the generated training loop.

    Args:
      params: the model parameters, a global array.
      batch: the global batch of this step.
      items: host-side numbers this stage folds into its running statistics.
      step: the training step.

    Returns:
      The updated parameters.
    """
'''

# Process-dependent branches: a hazard (collective work on one process) and a correct one.
BRANCH_HAZARD = '''    if jax.process_index() == 0:
        metrics_{k} = eval_step(params, batch)
        log.info("eval %s", metrics_{k})
'''
BRANCH_HELPER = '''    if is_main():
        params = train_step(params, batch)
'''
BRANCH_BENIGN = '''    if RANK == 0:
        log.info("step %d offset %f", step, offset)
        print("scale", scale)
'''
BRANCH_SYNC = '''    if os.environ.get("RANK", "0") == "0":
        log.warning("writing summary %d", step)
    multihost_utils.sync_global_devices("step_{k}")
'''
BRANCHES = (BRANCH_HAZARD, BRANCH_BENIGN, BRANCH_HELPER, BRANCH_BENIGN, BRANCH_SYNC)


def _function(name: str, n_lines: int, n_branches: int, start_k: int, calls: str | None) -> tuple[str, int]:
    """A function of about `n_lines` lines with `n_branches` process-dependent branches spread
    evenly between filler blocks; returns (source, next k)."""
    out = [f"def {name}(params, batch, items, step, scale=1.0, offset=0.0, limit=10.0):\n", DOCSTRING]
    used = 1 + DOCSTRING.count("\n")
    k = start_k
    blocks = max(1, (n_lines - used - 3) // FILLER.count("\n"))
    every = max(1, blocks // max(1, n_branches)) if n_branches else blocks + 1
    placed = 0
    for b in range(blocks):
        out.append(FILLER.format(k=k))
        used += FILLER.count("\n")
        if n_branches and placed < n_branches and b % every == every - 1:
            br = BRANCHES[k % len(BRANCHES)]
            out.append(br.format(k=k))
            used += br.count("\n")
            placed += 1
        k += 1
    while placed < n_branches:  # whatever did not fit between blocks
        br = BRANCHES[k % len(BRANCHES)]
        out.append(br.format(k=k))
        placed += 1
        k += 1
    if calls:
        out.append(f"    params = {calls}(params, batch, items, step, scale, offset, limit)\n")
    out.append("    return params\n\n\n")
    return "".join(out), k


def generate(lines: int, branches: int | None = None, huge_fraction: float = 0.25, fn_lines: int = 100) -> str:
    """Source of a module of about `lines` lines and `branches` process-dependent branches."""
    branches = lines // 100 if branches is None else branches
    parts = [HEADER]
    huge_lines = int(lines * huge_fraction)
    huge_branches = int(branches * huge_fraction)
    rest_lines = lines - huge_lines - HEADER.count("\n")
    n_fns = max(1, rest_lines // fn_lines)
    per_fn = (branches - huge_branches) / n_fns
    k = 0
    acc = 0.0
    for i in range(n_fns):
        acc += per_fn
        nb = int(acc)
        acc -= nb
        # every third function hands on to the previous one: a call chain through the module
        calls = f"step_{i - 1}" if i and i % 3 == 0 else None
        src, k = _function(f"step_{i}", fn_lines, nb, k, calls)
        parts.append(src)
    src, k = _function("train_everything", huge_lines, huge_branches, k, f"step_{n_fns - 1}")
    parts.append(src)
    return "".join(parts)


def lint_cli(source: str, checkout: Path, work: Path) -> dict:
    """The real command line (`python -m mcjax_lint`, the checkout's code) on a project holding
    just this file, without the cache: wall and CPU seconds, `--timings` phases, findings."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "pyproject.toml").write_text("[tool.mcjax]\nmax-file-size = 100000000\n")
    (work / "big_train.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [sys.executable, "-m", "mcjax_lint", "--no-cache", "--timings", "--exit-zero", "--format", "json",
           "--jobs", "1", "big_train.py"]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"mcjax-lint failed ({out.returncode}): {out.stderr[-2000:]}")
    phases = {}
    for line in out.stderr.splitlines():
        if line.startswith("timings: ") and "=" in line:
            for part in line.split()[1:]:
                k, _, v = part.partition("=")
                if v.endswith("s"):
                    phases[k] = float(v[:-1])
    by_code: dict[str, int] = {}
    for f in json.loads(out.stdout or "[]"):
        by_code[f["code"]] = by_code.get(f["code"], 0) + 1
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"wall": wall, "cpu": cpu, "phases": phases, "findings": by_code}


def lint_engine(source: str, path: str = "big_train.py", profile: int = 0) -> dict:
    """In this process, phase by phase (serial engine; cProfile of the precise pass if asked)."""
    from mcjax_lint import engine

    t = T()
    summary = engine.summarize(source, path, "big_train")
    t_sum = T() - t
    t = T()
    index = engine.build_index([summary])
    t_idx = T() - t
    prof = cProfile.Profile() if profile else None
    t = T()
    if prof:
        prof.enable()
    findings = engine.analyze(source, path, "big_train", index) if engine.needs_full_analysis(summary, index) else []
    if prof:
        prof.disable()
    t_an = T() - t
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(profile)
        print(buf.getvalue())
    return {"summary_s": t_sum, "index_s": t_idx, "analysis_s": t_an, "findings": len(findings)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, nargs="*", default=[15000, 30000, 60000])
    ap.add_argument("--branches-per-100-lines", type=float, default=1.0)
    ap.add_argument("--huge-fraction", type=float, default=0.25, help="share of lines and branches in one function")
    ap.add_argument("--against", type=Path, action="append", default=[],
                    help="another checkout (e.g. main's worktree) to run on the same files, side by side")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="instead: the serial engine in this process, cProfile of the precise pass, top N")
    ap.add_argument("--write", type=Path, help="only write the generated file (the first --lines) here")
    args = ap.parse_args(argv)
    if args.write:
        n = args.lines[0]
        args.write.write_text(generate(n, int(n * args.branches_per_100_lines / 100), args.huge_fraction))
        return 0
    if args.profile:
        for n in args.lines:
            r = lint_engine(generate(n, int(n * args.branches_per_100_lines / 100), args.huge_fraction), profile=args.profile)
            print(f"{n} lines: summary {r['summary_s']:.2f} s, index {r['index_s']:.2f} s, precise {r['analysis_s']:.2f} s")
        return 0
    checkouts = [HERE.parent, *args.against]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'checkout':<28} {'lines':>7} {'branches':>8} {'wall s':>7} {'CPU s':>7} {'µs/line':>8}  phases (s)  findings")
    with tempfile.TemporaryDirectory(prefix="mcjax-big-") as tmp:
        for n in args.lines:
            nb = int(n * args.branches_per_100_lines / 100)
            src = generate(n, nb, args.huge_fraction)
            real = src.count("\n")
            for co in checkouts:
                r = lint_cli(src, co, Path(tmp) / co.name)
                ph = " ".join(f"{k}={v:.2f}" for k, v in r["phases"].items() if v >= 0.05)
                print(f"{str(co)[-28:]:<28} {real:>7} {nb:>8} {r['wall']:>7.2f} {r['cpu']:>7.2f} "
                      f"{r['cpu'] / real * 1e6:>8.1f}  {ph}  {r['findings']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
