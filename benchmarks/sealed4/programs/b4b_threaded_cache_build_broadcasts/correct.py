# Data-cache startup: build_caches runs the distributed cache builds (each ending in a leader -> all
# broadcast) one after another on the main thread, in component order; only non-collective work is threaded.
# Source: https://github.com/marin-community/marin/pull/5388
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import concurrent.futures
import dataclasses
import os
import time
import zlib

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass(frozen=True)
class Component:
    name: str
    num_shards: int
    weight: float


COMPONENTS = [
    Component("web", 6, 0.5), Component("code", 3, 0.2), Component("books", 4, 0.2),
    Component("math", 2, 0.05), Component("papers", 5, 0.05),
]


def _read_shard_ledger(comp: Component) -> np.ndarray:
    """Leader-side metadata round trip (object-store latency differs per component)."""
    seed = zlib.crc32(comp.name.encode())
    rng = np.random.default_rng(seed)
    time.sleep(0.01 * (seed % 9))
    return rng.integers(1000, 5000, size=comp.num_shards).astype(np.int32)


def _distributed_build_cache(comp: Component) -> np.ndarray:
    ledger = _read_shard_ledger(comp) if jax.process_index() == 0 else np.zeros(comp.num_shards, np.int32)
    # the leader publishes the finished ledger; followers receive it
    return np.asarray(multihost_utils.broadcast_one_to_all(ledger))


def _build_one(comp: Component):
    if comp.weight <= 0:
        return comp.name, None
    return comp.name, _distributed_build_cache(comp)


def build_caches(components) -> dict:
    results = [_build_one(comp) for comp in components]     # builds are serialized: same order everywhere
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:   # local post-processing only
        sizes = list(pool.map(lambda r: None if r[1] is None else int(r[1].nbytes), results))
    return {name: cache for (name, cache), size in zip(results, sizes) if size is not None}


caches = build_caches(COMPONENTS)
rows = {name: int(np.sum(ledger)) for name, ledger in sorted(caches.items())}
print("RESULT rows", rows)
