# A training step is skipped when this process's own loss is NaN/inf; the step's gradient all-reduce is skipped with it
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/5359
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainerConfig:
    features: int = 4
    batch_per_process: int = 4
    max_steps: int = 6
    lr: float = 0.1
    corrupt_step: int = 2  # one record of process 1's shard at this step is corrupt (inf), as with bad audio data


MESH = Mesh(np.array(jax.devices()), ("data",))
BATCH = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class ShardedDataset:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rank = jax.process_index()

    def batch(self, step):
        rng = np.random.default_rng(31 * step + self.rank)
        x = rng.normal(size=(self.cfg.batch_per_process, self.cfg.features)).astype(np.float32)
        if self.rank == 1 and step == self.cfg.corrupt_step:
            x[1, 2] = np.inf
        y = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)
        return x, y


def local_loss(w_host, x, y):
    """training_step output as each process sees it: the loss on its own micro-batch only."""
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.mean((x @ w_host - y) ** 2))


@jax.jit
def optimizer_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)  # mean over the global batch: all-reduce
    return w - 0.1 * grad


def main():
    cfg = TrainerConfig()
    data = ShardedDataset(cfg)
    w = jax.device_put(jnp.zeros((cfg.features,), jnp.float32), REPL)
    applied, skipped = 0, 0
    for step in range(cfg.max_steps):
        x, y = data.batch(step)
        loss = local_loss(np.asarray(w), x, y)
        invalid = not np.isfinite(loss)
        if invalid:
            print(f"step {step}: invalid loss {loss}, skipping")
            skipped += 1
            continue
        gx = jax.make_array_from_process_local_data(BATCH, x)
        gy = jax.make_array_from_process_local_data(BATCH, y)
        w = optimizer_step(w, gx, gy)
        applied += 1
    multihost_utils.sync_global_devices("fit_end")
    print("RESULT applied_steps", applied, "skipped_steps", skipped)
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


if __name__ == "__main__":
    main()
