# Every rank logs the same metric keys every step (0/1 flag); the epoch-end sync reduces each key
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/19917
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CLIP_NORM = 4.0


class ResultCollection:
    """Accumulates values logged with self.log(..., on_epoch=True, sync_dist=True)."""

    def __init__(self):
        self.sums = defaultdict(float)
        self.counts = defaultdict(int)

    def log(self, key, value):
        self.sums[key] += float(value)
        self.counts[key] += 1

    def sync_and_compute(self):
        out = {}
        for key in sorted(self.sums):  # one cross-process reduction per logged key
            local = np.array([self.sums[key], self.counts[key]], np.float64)
            total = np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)
            out[key] = round(float(total[0] / total[1]), 4)
        return out


class Module:
    def __init__(self, mesh):
        self.rows = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(jnp.zeros((3,)), NamedSharding(mesh, P()))
        self.results = ResultCollection()
        self._step = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))

    def training_step(self, x, y):
        local_norm = float(np.linalg.norm(x, axis=1).max())  # this rank's batch only
        gx = jax.make_array_from_process_local_data(self.rows, x)
        gy = jax.make_array_from_process_local_data(self.rows, y)
        loss, grad = self._step(self.w, gx, gy)
        self.w = self.w - 0.01 * grad
        self.results.log("train/loss", loss)
        self.results.log("train/clipped_inputs", 1.0 if local_norm > CLIP_NORM else 0.0)


def batches(rank, n_steps=6):
    rng = np.random.default_rng(rank)
    scale = 1.0 if rank == 0 else 3.0  # rank 1 reads the raw (unnormalised) shard
    for _ in range(n_steps):
        x = (scale * rng.normal(size=(4, 3))).astype(np.float32)
        yield x, (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    module = Module(mesh)
    for x, y in batches(jax.process_index()):
        module.training_step(x, y)
    metrics = module.results.sync_and_compute()
    for key, value in sorted(metrics.items()):
        print("RESULT", key, value)


main()
