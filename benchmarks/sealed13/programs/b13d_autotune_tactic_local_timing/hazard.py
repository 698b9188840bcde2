# Kernel autotuner that picks each rank's tactic from that rank's own timings, then registers a tactic-sized symmetric buffer
# Source: https://github.com/flashinfer-ai/flashinfer/issues/3186
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
TP = NamedSharding(MESH, P("tp"))
TACTICS = {"tile8": 8, "tile16": 16, "tile32": 32}
BASE_US = {"tile8": 41.0, "tile16": 40.8, "tile32": 40.9}   # near-ties: within timing noise


class KernelTimer:
    """Stands in for CUDA-event timing on this rank's GPU: the same kernel measures a few % apart per GPU."""

    def __init__(self, device_index):
        self.rng = np.random.default_rng(100 + device_index)

    def measure(self, tactic, repeats=5):
        return float(np.median([BASE_US[tactic] * (1.0 + 0.03 * self.rng.standard_normal())
                                for _ in range(repeats)]))


class AutoTuner:
    def __init__(self):
        self.timer = KernelTimer(jax.process_index())
        self.cache = {}

    def profile(self, key):
        return np.array([self.timer.measure(t) for t in TACTICS], np.float64)

    def choose_one(self, key):
        if key not in self.cache:
            timings = self.profile(key)
            self.cache[key] = list(TACTICS)[int(np.argmin(timings))]
        return self.cache[key]


def register_symmetric_window(nbytes):
    """ncclCommWindowRegister-like: every rank must register the same size, in the same order."""
    sizes = multihost_utils.process_allgather(np.zeros((nbytes // 4,), np.float32))
    return sizes.shape


@jax.jit
def moe_reduce(scratch):
    return jnp.sum(scratch.reshape(-1, 8), axis=0)          # fused all-reduce over the tp-sharded scratch


def capture_cuda_graphs(tuner, batch_sizes, hidden=8):
    outputs = []
    for bs in batch_sizes:
        tactic = tuner.choose_one(("fp4_moe", bs))
        tile = TACTICS[tactic]
        rows = math.ceil(bs / tile) * tile
        register_symmetric_window(rows * hidden * 4)
        local = np.full((rows, hidden), 1.0 / rows, np.float32)
        scratch = jax.make_array_from_process_local_data(TP, local)
        outputs.append(float(jnp.sum(moe_reduce(scratch))))
    return outputs


def main():
    tuner = AutoTuner()
    out = capture_cuda_graphs(tuner, batch_sizes=[4, 24, 40])
    print("RESULT tactics", [tuner.cache[("fp4_moe", bs)] for bs in (4, 24, 40)])
    print("RESULT captured", [round(v, 4) for v in out])


if __name__ == "__main__":
    main()
