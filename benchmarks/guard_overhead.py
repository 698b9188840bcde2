"""Hot-path overhead of the runtime guard, guarded vs unguarded, measured side by side.

Starts N real local JAX processes (CPU, 1 device each, loopback coordinator). In each process,
rounds alternate unguarded / fast / strict (the guard is installed and removed between rounds, so
all variants run in the same processes, on the same arrays, interleaved against drift). Per round
and variant it times a loop of cross-process dispatches:
  - tiny:  a column sum of a sharded global array (an all-reduce of 32 floats): the dispatch alone
           (a program that exchanges nothing between devices is local work to the guard);
  - sync:  the same column sum, called and waited for: a ~200 µs cross-process step;
  - step:  a small MLP training step on a sharded batch (gradients all-reduced over gloo), called
           and waited for: the whole step.
It also times the guard's own bookkeeping in isolation (Recorder.record, the jit wrapper).

    python benchmarks/guard_overhead.py [--processes 2] [--calls 2000] [--rounds 5] [--soak 100000]

It also reports the CPU time the guard's exchange threads (publisher, watcher) took per second of a
fast round, in every process: on a 2-core machine that time is taken from JAX's and gloo's threads.
`--soak N` adds a resident-memory soak of N dispatches (after N of warm-up) per variant: minutes
on a loaded 2-core machine; `benchmarks/guard_rss.py` measures every process, alternating.

Prints median per-call microseconds (per round; the median over rounds), the guarded/unguarded
ratio per variant, and the median over rounds of fast / unguarded within each round (neighbours in
time, so the machine's drift mostly cancels: run many rounds, `--rounds 15`, for the step).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def worker(pid: int, n: int, port: int, calls: int, rounds: int, soak: int = 0) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    import runtime_guard
    from runtime_guard.settings import GuardSettings

    jax.distributed.initialize(f"127.0.0.1:{port}", n, pid)
    mesh = Mesh(np.array(jax.devices()), ("d",))
    data, repl = NamedSharding(mesh, P("d")), NamedSharding(mesh, P())
    x = jax.make_array_from_process_local_data(data, np.ones((64, 32), np.float32))
    y = jax.make_array_from_process_local_data(data, np.ones((64, 1), np.float32))
    params = {"w1": jax.device_put(np.full((32, 64), 0.01, np.float32), repl),
              "w2": jax.device_put(np.full((64, 1), 0.01, np.float32), repl)}

    def make():
        # Fresh function objects per round: JAX's C++ dispatch cache is keyed by the function, and
        # an entry cached in one variant's round must not serve another variant's.
        def tiny(a):
            return (a * 2.0).sum(axis=0)  # an all-reduce of 32 floats: the smallest cross-process work

        def step(p, x, y):
            def loss(p):
                h = jnp.tanh(x @ p["w1"])
                return jnp.mean((h @ p["w2"] - y) ** 2)

            g = jax.grad(loss)(p)
            return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

        return tiny, step

    def timed(f, args, k, whole):
        """Median µs per call: of the dispatch alone (`whole` False: the execution queue is drained
        outside the timed calls, every 16), or of the call and its execution (`whole` True). A
        median per call, not a loop's mean, so that the other work on this 2-core machine (the
        other process, gloo's threads, a publish) does not land on one variant by chance."""
        jax.block_until_ready(f(*args))
        clock = time.perf_counter_ns
        ts = []
        for i in range(k):
            t0 = clock()
            out = f(*args)
            if whole:
                jax.block_until_ready(out)
            ts.append(clock() - t0)
            if not whole and i % 16 == 15:  # keep gloo and the async queue from piling up on 2 cores
                jax.block_until_ready(out)
        jax.block_until_ready(out)
        return statistics.median(ts) / 1e3

    def thread_cpu(threads: list) -> float:
        """CPU seconds (user + system) the given threads have used so far."""
        tick, total = os.sysconf("SC_CLK_TCK"), 0.0
        for t in threads:
            try:
                with open(f"/proc/self/task/{t.native_id}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError, TypeError):
                pass
        return total

    results: dict[str, list[float]] = {}
    for _r in range(rounds):
        for variant in ("unguarded", "fast", "strict"):
            threads: list = []
            if variant != "unguarded":
                # With a flight file, as `mcjax-guard` runs it (the recorder's ring is that file).
                g = runtime_guard.install(GuardSettings(mode=variant, quiet=True, state_dir=tempfile.mkdtemp()))
                threads = list(g.exchange._threads) if g.exchange is not None else []
            cpu0, wall0 = thread_cpu(threads), time.perf_counter()
            tiny, step = make()
            ftiny, fstep = jax.jit(tiny), jax.jit(step)  # created after install: wrapped when guarded
            results.setdefault(f"tiny/{variant}", []).append(timed(ftiny, (x,), calls, False))
            # The same, called and waited for: a ~200 µs cross-process step (the gloo all-reduce).
            results.setdefault(f"sync/{variant}", []).append(timed(ftiny, (x,), max(200, calls // 4), True))
            results.setdefault(f"step/{variant}", []).append(timed(fstep, (params, x, y), max(100, calls // 10), True))
            if variant == "fast":  # ms of CPU per s of the round
                results.setdefault("threads_cpu", []).append(
                    (thread_cpu(threads) - cpu0) / (time.perf_counter() - wall0) * 1e3)
            runtime_guard.uninstall()

    # Resident memory over many dispatches, unguarded then fast (the guard's ring, tables and
    # threads must not grow with the dispatch count).
    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6

    for variant in ("unguarded", "fast") if soak else ():
        if variant == "fast":
            runtime_guard.install(GuardSettings(mode="fast", quiet=True, state_dir=tempfile.mkdtemp()))
        ftiny = jax.jit(make()[0])
        timed(ftiny, (x,), soak, False)  # warm: JAX's and the allocator's own first-100k growth (~2 MB, unguarded too)
        before = rss_mb()
        timed(ftiny, (x,), soak, False)
        results[f"rss/{variant}"] = [rss_mb() - before]
        runtime_guard.uninstall()

    # The guard's own bookkeeping, without JAX: the recorder and the wrapper's Python layer.
    from runtime_guard.flight import FlightRecorder
    from runtime_guard.recorder import Recorder

    rec = Recorder(FlightRecorder(tempfile.mkdtemp()))
    code = sys._getframe().f_code
    t = time.perf_counter()
    for _ in range(100000):
        rec.record(12345, 0, code, 1)
    results["record()"] = [(time.perf_counter() - t) / 100000 * 1e6]
    out: dict = {k: statistics.median(v) for k, v in results.items()}
    out["threads_cpu"] = results.get("threads_cpu", [0.0])
    # Per round, fast against the unguarded run just before it: the machine's drift between
    # rounds (±30% within minutes here) mostly cancels in a ratio of neighbours.
    for w in ("tiny", "sync", "step"):
        out[f"{w}/pairs"] = [f / u for u, f in zip(results[f"{w}/unguarded"], results[f"{w}/fast"])]
    return out


def hot_path(rounds: int, calls: int = 20000, local: bool = False) -> dict[str, float]:
    """The guard's own cost per dispatch, isolated from cross-process noise: one process, a cached
    jit call through JAX's C++ fast path, raw and through the guard's wrapper (recording it exactly
    as it records a cross-process dispatch), the two calls alternating in one loop and each timed
    on its own, so that drift of the machine's speed hits both alike. Median per call."""
    import jax
    import jax.numpy as jnp

    from runtime_guard.guard import _LOCAL, _MULTI, Guard, GuardedJit
    from runtime_guard.settings import GuardSettings

    g = Guard(GuardSettings(quiet=True, state_dir=tempfile.mkdtemp()))  # flight file on, as under mcjax-guard
    g.active, g.num_processes = True, 1
    x = jnp.ones((64, 32), jnp.float32)
    clock = time.perf_counter_ns
    per_round: list[tuple[float, float]] = []
    for _ in range(rounds):
        raw_t: list[int] = []
        guarded_t: list[int] = []
        raw = jax.jit(lambda a: a * 2.0 + 1.0)
        guarded = GuardedJit(jax.jit(lambda a: a * 2.0 + 1.0), g)
        jax.block_until_ready((raw(x), guarded(x)))
        # record every call, as for a cross-process computation (or: a jit seen running locally only)
        guarded._kind = _LOCAL if local else _MULTI
        for i in range(calls):
            t0 = clock()
            a = raw(x)
            t1 = clock()
            b = guarded(x)
            t2 = clock()
            raw_t.append(t1 - t0)
            guarded_t.append(t2 - t1)
            if i % 64 == 63:
                jax.block_until_ready((a, b))  # keep the execution queue short
        per_round.append((statistics.median(raw_t) / 1e3, statistics.median(guarded_t) / 1e3))
    added = sorted(g_ - r for r, g_ in per_round)
    return {"raw": statistics.median(r for r, _ in per_round), "guarded": statistics.median(g_ for _, g_ in per_round),
            "added": statistics.median(added), "added_rounds": added}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--soak", type=int, default=0, help="dispatches of the resident-memory soak (0: none)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        print("RESULT " + json.dumps(worker(a.worker, a.processes, a.port, a.calls, a.rounds, a.soak)), flush=True)
        return

    from runtime_guard.launcher import free_port

    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1",
               XLA_FLAGS="--xla_cpu_collective_timeout_seconds=120")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), "--processes", str(a.processes),
                               "--port", str(port), "--calls", str(a.calls), "--rounds", str(a.rounds),
                               "--soak", str(a.soak)],
                              env=env, stdout=subprocess.PIPE, text=True) for i in range(a.processes)]
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    res = [json.loads(line[7:]) for o in outs for line in o.splitlines() if line.startswith("RESULT ")]
    if len(res) != a.processes:
        sys.exit("a worker failed")
    r = res[0]  # process 0; the others are printed for spread
    print(f"mcjax guard overhead: {a.processes} processes, 1 CPU device each, median of {a.rounds} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'workload':<8} {'unguarded µs':>13} {'fast µs':>9} {'fast/ung':>9} {'strict µs':>10} {'strict/ung':>11}")
    for w in ("tiny", "sync", "step"):
        u, f, s = r[f"{w}/unguarded"], r[f"{w}/fast"], r[f"{w}/strict"]
        print(f"{w:<8} {u:13.1f} {f:9.1f} {f / u:9.2f} {s:10.1f} {s / u:11.2f}")
    for w in ("tiny", "sync", "step"):
        pairs = sorted(r[f"{w}/pairs"])
        print(f"{w}: fast / unguarded of the same round, median of {len(pairs)} rounds {statistics.median(pairs):.3f} "
              f"(rounds {pairs[0]:.3f}–{pairs[-1]:.3f})")
    print(f"guard bookkeeping per dispatch (Recorder.record): {r['record()']:.2f} µs")
    print("guard exchange threads' CPU per second of a fast round: " + ", ".join(
        f"process {i} {statistics.median(o['threads_cpu']):.1f} ms" for i, o in enumerate(res)))
    if a.soak:
        print(f"resident memory over {a.soak} tiny dispatches after {a.soak} of warm-up, process 0: "
              f"unguarded {r['rss/unguarded']:+.2f} MB, fast {r['rss/fast']:+.2f} MB")
    hp = hot_path(a.rounds)
    print(f"hot path, one process, cached jit on the C++ fast path (median per call, alternating): raw {hp['raw']:.2f} µs, "
          f"guarded {hp['guarded']:.2f} µs, added {hp['added']:.2f} µs per dispatch "
          f"(median of {a.rounds} rounds; rounds: {', '.join(f'{v:.2f}' for v in hp['added_rounds'])})")
    lp = hot_path(a.rounds, local=True)
    print(f"local jit (seen running on this process only), same loop: raw {lp['raw']:.2f} µs, guarded "
          f"{lp['guarded']:.2f} µs, added {lp['added']:.2f} µs per call")
    for i, o in enumerate(res[1:], 1):
        print(f"(process {i}: tiny {o['tiny/unguarded']:.1f}/{o['tiny/fast']:.1f}/{o['tiny/strict']:.1f} µs, "
              f"step {o['step/unguarded']:.1f}/{o['step/fast']:.1f}/{o['step/strict']:.1f} µs)")


if __name__ == "__main__":
    main()
