"""Two threads of each process broadcast host values with `multihost_utils.broadcast_one_to_all`
from the same line (a metrics thread and a checkpoint thread, say).

Correct: the second thread starts after the first one is done, so every process runs the
threads' computations in the same order. With `hazard` as argument both threads run at once:
which thread's computation meets which on the other process depends on scheduling (identical
sequences, cross-wired data, or a deadlock when they differ): reported at the first overlap.
"""

import sys
import threading

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize()
results: dict[str, list] = {"a": [], "b": []}


def broadcaster(name: str, value: float) -> None:
    for _ in range(20):
        out = multihost_utils.broadcast_one_to_all(np.full(4, value, np.float32))  # site: p0
        results[name].append(float(out[0]))


threads = [threading.Thread(target=broadcaster, args=("a", 1.0)), threading.Thread(target=broadcaster, args=("b", 2.0))]
if sys.argv[1:] == ["hazard"]:
    for t in threads:
        t.start()
    for t in threads:
        t.join()
else:
    for t in threads:
        t.start()
        t.join()
print("broadcast", sorted(set(results["a"])), sorted(set(results["b"])))
