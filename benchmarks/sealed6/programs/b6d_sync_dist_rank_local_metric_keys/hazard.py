# Validation logging with sync_dist: each log call all-reduces its value right away, but which metric
# names a process logs depends on its own batch, so the reductions pair different metrics
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/21409
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("ddp",))
_mean = jax.jit(jnp.mean, out_shardings=NamedSharding(MESH, P()))


def sync_ddp(value: float) -> float:
    """Mean of one scalar over all processes (the strategy's reduce)."""
    local = np.array([value], np.float32)
    arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("ddp")), local)
    return float(_mean(arr))


class ResultCollection:
    def __init__(self):
        self.sums = collections.OrderedDict()
        self.counts = collections.Counter()

    def log(self, name, value, sync_dist=False):
        if sync_dist:
            value = sync_ddp(value)
        self.sums[name] = self.sums.get(name, 0.0) + value
        self.counts[name] += 1

    def compute(self):
        return {k: self.sums[k] / self.counts[k] for k in self.sums}


class DistributedSampler:
    def __init__(self, n, rank, world_size):
        self.n, self.rank, self.world_size = n, rank, world_size

    def __iter__(self):
        return iter(range(self.rank, self.n, self.world_size))


class RegressionModule:
    def __init__(self):
        self.w = 0.9
        self.results = ResultCollection()

    def log(self, name, value, sync_dist=False):
        self.results.log(name, value, sync_dist=sync_dist)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = float((self.w * x - y) ** 2)
        self.log("val_loss", loss, sync_dist=True)
        if int(y) % 2 == 0:
            self.log("val_metric_even", abs(self.w * x - y) / (1.0 + y), sync_dist=True)
        else:
            self.log("val_metric_odd", abs(self.w * x - y) / (2.0 + y), sync_dist=True)
        return loss


def run_validation(module, dataset):
    sampler = DistributedSampler(len(dataset), jax.process_index(), jax.process_count())
    for batch_idx, i in enumerate(sampler):
        module.validation_step(dataset[i], batch_idx)
    return module.results.compute()


if __name__ == "__main__":
    dataset = [(float(i) + 0.5, float(i)) for i in range(8)]
    metrics = run_validation(RegressionModule(), dataset)
    for name, value in sorted(metrics.items()):
        print("RESULT", name, round(value, 5))
