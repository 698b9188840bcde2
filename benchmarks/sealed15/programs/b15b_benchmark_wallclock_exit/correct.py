# Data-parallel throughput benchmark: process 0's clock decides, for everyone, when the minimum time and trials have passed
# Source: https://github.com/pytorch/pytorch/issues/22834
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))


@dataclass
class BenchConfig:
    mintime: float = 2.0          # seconds
    mintrials: int = 3
    maxtrials: int = 400
    batch: int = 16
    read_latency_s: float = 0.5   # per shard file on the (slow) local disk


def load_shards(cfg, rank):
    """Each process reads its own shard files; process 1 was assigned more of them."""
    n_files = (1, 6)[rank]
    rng = np.random.default_rng(rank)
    shards = []
    for _ in range(n_files):
        time.sleep(cfg.read_latency_s)
        shards.append(rng.normal(size=(cfg.batch, 8)).astype(np.float32))
    return shards


@jax.jit
def sgd_step(w, x):
    def loss_fn(w):
        return jnp.mean((jnp.tanh(x @ w) - 0.5) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


def run_benchmark(cfg, shards):
    w = jnp.full((8,), 0.1, jnp.float32)
    start = time.time()
    trial, loss = 0, None
    for trial in range(1, cfg.maxtrials + 1):
        x = multihost_utils.host_local_array_to_global_array(shards[trial % len(shards)], MESH, P("dp"))
        w, loss = sgd_step(w, x)
        loss = float(loss)
        finish = time.time()
        done = np.array([finish - start >= cfg.mintime and trial >= cfg.mintrials], np.int32)
        if int(multihost_utils.broadcast_one_to_all(done)[0]):     # rank 0's timing, sent to all
            break
    return trial, loss, time.time() - start


def main():
    cfg = BenchConfig()
    shards = load_shards(cfg, jax.process_index())
    trials, loss, elapsed = run_benchmark(cfg, shards)
    multihost_utils.sync_global_devices("benchmark done")
    print(f"throughput {trials * cfg.batch * jax.process_count() / elapsed:.1f} samples/s")
    print(f"RESULT trials {trials} loss {loss:.6f}")


if __name__ == "__main__":
    main()
