# Lightning-style logging: log_dict(sync_dist=True) with a key that only some ranks log at a step
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19106
# Port to multi-controller JAX with the same keys logged on every rank (as the docs now require); written for the mcjax sealed7 set.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


def _sync_ddp(value: float) -> float:
    return float(np.mean(multihost_utils.process_allgather(np.array(value, np.float32))))


class ResultCollection:
    def __init__(self):
        self.logged: dict[str, list] = {}

    def log(self, name: str, value: float, sync_dist: bool) -> None:
        if sync_dist:
            value = _sync_ddp(value)
        self.logged.setdefault(name, []).append(value)


class SimpleNetwork:
    def __init__(self):
        self.results = ResultCollection()
        self.params = jax.device_put(jnp.full((8, 1), 0.1, jnp.float32), REPL)
        self._step = jax.jit(self._train_step)

    @staticmethod
    def _train_step(w, x, y):
        loss, g = jax.value_and_grad(lambda v: jnp.mean((x @ v - y) ** 2))(w)
        return w - 0.05 * g, loss

    def log_dict(self, metrics: dict, sync_dist: bool = False) -> None:
        for name, value in metrics.items():
            self.results.log(name, value, sync_dist=sync_dist)

    def training_step(self, batch) -> float:
        x, y = batch
        gx = jax.make_array_from_process_local_data(DATA, x)
        gy = jax.make_array_from_process_local_data(DATA, y)
        self.params, loss = self._step(self.params, gx, gy)
        dict_to_log = {"loss": float(loss)}
        positives = y[y[:, 0] > 1.0]
        # every rank logs the same keys at every step (0.0 when this rank has no positive target)
        dict_to_log["positive_target_mean"] = float(positives.mean()) if len(positives) else 0.0
        self.log_dict(dict_to_log, sync_dist=True)
        return float(loss)


def train_dataloader(num_batches: int):
    rng = np.random.default_rng(5 + jax.process_index())  # each rank's shard
    for _ in range(num_batches):
        x = rng.normal(size=(4, 8)).astype(np.float32)
        yield x, (x[:, :1] * 0.8 + rng.normal(size=(4, 1)) * 0.1).astype(np.float32)


model = SimpleNetwork()
for batch in train_dataloader(8):
    model.training_step(batch)
print("RESULT", round(float(jnp.sum(model.params)), 5),
      {k: round(v[-1], 5) for k, v in sorted(model.results.logged.items())})
