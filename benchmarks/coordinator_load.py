"""Load the guard puts on JAX's coordination service, with 2 to 32 simulated processes.

A real coordination service (as process 0 hosts it) and N real clients, spread over a few worker
processes (threads inside them), exchanging exactly the guard's traffic: every client publishes a
state of realistic size (built by the guard's own `Exchange.state()` after 1,000 dispatches) every
publish interval (the guard's default), and client 0 reads all states in one `dir` call per
round, as the comparator does.

For each N it prints: the achieved key-value operations per second, the latency of a state
publication (p50/p99) and of the comparator's read of all N states (p50/p99), and the saturation
rate (every client publishing as fast as it can). A model of the growth to thousands of processes
is in docs/benchmarks.md.

    python benchmarks/coordinator_load.py [--sizes 2,4,8,16,32] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import threading
import time

from runtime_guard.settings import GuardSettings

INTERVAL = GuardSettings().interval  # the guard's default publish interval


def realistic_state() -> str:
    from runtime_guard.exchange import Exchange, Registry
    from runtime_guard.recorder import Recorder
    from runtime_guard.settings import GuardSettings

    rec = Recorder()
    code = sys._getframe().f_code
    for i in range(1000):
        rec.record(0x1234567890ABCDEF ^ (i % 7), i % 3, code, 100 + i % 50)
    ex = Exchange(kv=None, recorder=rec, registry=Registry(), process=3, count=32, settings=GuardSettings(),
                  on_verdict=lambda r: None)
    return json.dumps(ex.state(), separators=(",", ":"))


def worker(address: str, ids: list[int], n: int, seconds: float, saturate: bool, state: str, q: mp.Queue) -> None:
    from runtime_guard.compat import coordination_client

    clients: dict[int, object] = {}

    def connect(i: int) -> None:
        clients[i] = coordination_client(address, i)

    ts = [threading.Thread(target=connect, args=(i,)) for i in ids]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # connect() returns once every task has registered: all workers start together.
    stats: dict[str, list[float]] = {"set": [], "dir": []}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        c = clients[i]
        local_set, local_dir = [], []
        nxt = time.monotonic()
        while time.monotonic() < stop:
            t = time.perf_counter()
            c.key_value_set(f"mcjax/v1/state/{i}", state, allow_overwrite=True)  # type: ignore[attr-defined]
            local_set.append(time.perf_counter() - t)
            if i == 0:
                t = time.perf_counter()
                c.key_value_dir_get("mcjax/v1/state/")  # type: ignore[attr-defined]
                local_dir.append(time.perf_counter() - t)
            if not saturate:
                nxt += INTERVAL
                time.sleep(max(0.0, nxt - time.monotonic()))
        with lock:
            stats["set"].extend(local_set)
            stats["dir"].extend(local_dir)

    ts = [threading.Thread(target=run, args=(i,)) for i in ids]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(stats)
    time.sleep(1.0)  # let the other workers finish before these clients go away


def measure(n: int, seconds: float, saturate: bool, state: str, workers: int) -> dict[str, float]:
    from runtime_guard.compat import coordination_service
    from runtime_guard.launcher import free_port

    address = f"127.0.0.1:{free_port()}"
    service = coordination_service(address, n)
    groups = [list(range(w, n, workers)) for w in range(min(workers, n))]
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(address, g, n, seconds, saturate, state, q)) for g in groups]
    for p in procs:
        p.start()
    results = [q.get(timeout=seconds * 3 + 120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    del service
    sets = sorted(x for r in results for x in r["set"])
    dirs = sorted(x for r in results for x in r["dir"])
    ops = len(sets) + len(dirs)

    def pct(v: list[float], q: float) -> float:
        return v[min(len(v) - 1, int(q * len(v)))] * 1e3 if v else float("nan")

    return {"ops_per_s": ops / seconds, "set_p50_ms": pct(sets, 0.5), "set_p99_ms": pct(sets, 0.99),
            "dir_p50_ms": pct(dirs, 0.5), "dir_p99_ms": pct(dirs, 0.99)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2,4,8,16,32")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    state = realistic_state()
    sizes = [int(x) for x in a.sizes.split(",")]
    print(f"mcjax coordinator load: state {len(state)} bytes per process, publish every {INTERVAL * 1000:.0f} ms, "
          f"{a.seconds:.0f} s per point, clients in {a.workers} worker processes on this machine")
    print(f"{'N':>4} {'ops/s':>8} {'set p50 ms':>11} {'set p99 ms':>11} {'dir(N) p50 ms':>14} {'dir(N) p99 ms':>14} "
          f"{'saturation ops/s':>17}")
    for n in sizes:
        steady = measure(n, a.seconds, False, state, a.workers)
        sat = measure(n, a.seconds, True, state, a.workers)
        print(f"{n:>4} {steady['ops_per_s']:8.0f} {steady['set_p50_ms']:11.2f} {steady['set_p99_ms']:11.2f} "
              f"{steady['dir_p50_ms']:14.2f} {steady['dir_p99_ms']:14.2f} {sat['ops_per_s']:17.0f}")


if __name__ == "__main__":
    main()
