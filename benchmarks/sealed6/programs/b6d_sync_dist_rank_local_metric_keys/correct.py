# Validation logging with sync_dist: values are kept locally and synced at one controlled point, in a
# deterministic order over the metric names agreed by all processes (the fix proposed for the issue)
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/21409
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
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


def all_metric_keys(names) -> list:
    """Sorted union of the metric names logged on every process."""
    raw = json.dumps(sorted(names)).encode()
    buf = np.zeros(512, np.uint8)
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    gathered = multihost_utils.process_allgather(buf)
    keys = set()
    for row in np.asarray(gathered):
        keys.update(json.loads(bytes(row).rstrip(b"\0").decode()))
    return sorted(keys)


class ResultCollection:
    def __init__(self):
        self.sums = collections.OrderedDict()
        self.counts = collections.Counter()
        self.sync_names = set()

    def log(self, name, value, sync_dist=False):
        if sync_dist:
            self.sync_names.add(name)
        self.sums[name] = self.sums.get(name, 0.0) + value
        self.counts[name] += 1

    def compute(self):
        out = {k: self.sums[k] / self.counts[k] for k in self.sums if k not in self.sync_names}
        for k in all_metric_keys(self.sync_names):
            total = sync_ddp(self.sums.get(k, 0.0)) * jax.process_count()
            count = sync_ddp(float(self.counts[k])) * jax.process_count()
            out[k] = total / count
        return out


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
