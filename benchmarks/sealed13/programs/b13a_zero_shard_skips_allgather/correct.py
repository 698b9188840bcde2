# ZeRO-1 style optimizer: every process joins each bucket's parameter all-gather, even with an empty shard
# Source: https://github.com/inclusionAI/AReno/pull/512
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class Bucket:
    name: str
    values: np.ndarray                       # full (replicated) copy of the bucket's flat parameters
    exp_avg: dict = field(default_factory=dict)

    def shard_range(self, rank, world):
        size = math.ceil(self.values.size / world)
        start = min(rank * size, self.values.size)
        return start, min(start + size, self.values.size), size


class ShardedAdam:
    def __init__(self, buckets, lr=0.1, beta=0.9):
        self.buckets, self.lr, self.beta = buckets, lr, beta
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.num_updated = 0

    def step(self, grads):
        for bucket in self.buckets:
            start, stop, size = bucket.shard_range(self.rank, self.world)
            updated_refs = list(range(start, stop))          # flat indices this rank owns and updated
            g = grads[bucket.name][start:stop]
            m = self.beta * bucket.exp_avg.get("m", np.zeros(stop - start, np.float32)) + (1 - self.beta) * g
            bucket.exp_avg["m"] = m
            shard = bucket.values[start:stop] - self.lr * m
            self.num_updated += len(updated_refs)
            padded = np.zeros(size, np.float32)  # a zero-length shard contributes only padding
            padded[: stop - start] = shard
            gathered = np.asarray(multihost_utils.process_allgather(padded)).reshape(-1)
            bucket.values = gathered[: bucket.values.size].astype(np.float32)


def loss_fn(params, x, y):
    hidden = jnp.tanh(x @ params["w"].reshape(3, 2))
    return jnp.mean((hidden @ jnp.ones(2) + params["b"][0] - y) ** 2)


grad_step = jax.jit(jax.value_and_grad(loss_fn), out_shardings=(REPL, REPL))


def main():
    rng = np.random.default_rng(0)
    buckets = [Bucket("w", rng.normal(size=6).astype(np.float32) * 0.5), Bucket("b", np.zeros(1, np.float32))]
    opt = ShardedAdam(buckets)
    losses = []
    for step in range(5):
        local = np.random.default_rng(10 * jax.process_index() + step)
        x = local.normal(size=(4, 3)).astype(np.float32)
        y = (x.sum(axis=1) > 0).astype(np.float32)
        params = {b.name: jax.device_put(b.values, REPL) for b in buckets}
        loss, grads = grad_step(params, *(jax.make_array_from_process_local_data(DATA, a) for a in (x, y)))
        opt.step({k: np.asarray(v) for k, v in grads.items()})
        losses.append(round(float(loss), 5))
    multihost_utils.sync_global_devices("training done")
    print("RESULT losses", losses)
    print("RESULT bias", np.round(buckets[1].values, 5).tolist())


if __name__ == "__main__":
    main()
