# The last mini-batch is smaller than the number of hosts' slots; a host with no samples steps on a zero-weight pad
# Source: https://github.com/LBANN/lbann/issues/97
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ReaderConfig:
    num_samples: int = 18
    mini_batch: int = 8  # global; partitioned over the hosts
    features: int = 3


class PartitionedDataReader:
    """Each global mini-batch is split into contiguous per-host partitions."""

    def __init__(self, cfg: ReaderConfig):
        self.cfg = cfg
        self.x = np.arange(cfg.num_samples * cfg.features, dtype=np.float32).reshape(-1, cfg.features) / 10.0
        self.y = (np.arange(cfg.num_samples) % 2).astype(np.float32)
        self.per_host = cfg.mini_batch // jax.process_count()

    def __iter__(self):
        for start in range(0, self.cfg.num_samples, self.cfg.mini_batch):
            lo = min(start + jax.process_index() * self.per_host, self.cfg.num_samples)
            hi = min(lo + self.per_host, self.cfg.num_samples)
            x, y = self.x[lo:hi], self.y[lo:hi]
            w = np.ones((hi - lo,), np.float32)
            pad = self.per_host - len(x)  # pad the partial partition with zero-weight samples
            x, y = np.pad(x, ((0, pad), (0, 0))), np.pad(y, (0, pad))
            w = np.pad(w, (0, pad))
            yield x, y, w


@jax.jit
def sgd_step(params, x, y, w):
    def loss_fn(p):
        pred = jax.nn.sigmoid(x @ p)
        per = -(y * jnp.log(pred + 1e-6) + (1 - y) * jnp.log(1 - pred + 1e-6))
        return jnp.sum(per * w) / jnp.maximum(jnp.sum(w), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return params - 0.5 * g, loss


def main():
    cfg = ReaderConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    data = NamedSharding(mesh, P("data"))
    reader = PartitionedDataReader(cfg)
    params = jnp.zeros((cfg.features,))
    steps = 0
    for epoch in range(2):
        for x, y, w in reader:
            x, y, w = (jax.make_array_from_process_local_data(data, a) for a in (x, y, w))
            params, loss = sgd_step(params, x, y, w)
            steps += 1
    total_steps = multihost_utils.process_allgather(np.int32(steps))
    print("RESULT steps_per_host", [int(s) for s in total_steps])
    print("RESULT params", [round(float(v), 4) for v in np.asarray(params.addressable_data(0))])


main()
