# Levanter-style checkpointer: each host decides from its own clock whether the time-based save is due
# Source: https://github.com/stanford-crfm/levanter/pull/77
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import datetime
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SETUP_SECONDS = {0: 0.0, 1: 3.0}  # host 1 builds a larger data-shard index before training starts
STEP_SECONDS = 1.0


class Checkpointer:
    def __init__(self, base_path, save_interval, step_policy, dt_now=datetime.datetime.now):
        self.base_path, self.save_interval, self.step_policy = base_path, save_interval, step_policy
        self._dt_now = dt_now
        self._last_save_time = self._dt_now()
        self.saved = []

    def on_step(self, step, params, force=False):
        should_save = force
        if self.step_policy and step % self.step_policy == 0:
            should_save = True
        elif self.save_interval and self._dt_now() - self._last_save_time >= self.save_interval:
            should_save = True
        if should_save:
            self.save_checkpoint(step, params)

    def save_checkpoint(self, step, params):
        path = os.path.join(self.base_path, f"step-{step}")
        host = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in sorted(params.items())}
        if jax.process_index() == 0:
            os.makedirs(path, exist_ok=True)
            np.savez(os.path.join(path, "params.npz"), **host)
        multihost_utils.sync_global_devices(f"checkpoint-{step}")
        self.saved.append(step)
        self._last_save_time = self._dt_now()


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w"]) @ p["v"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


def main():
    rank = jax.process_index()
    base = os.path.join(tempfile.gettempdir(), "mcjax_sealed16_time_save_clock_skew", os.environ.get("JOB_ID", "0"))
    time.sleep(SETUP_SECONDS[rank])  # data-shard index build
    data = np.random.default_rng(7 + rank)
    checkpointer = Checkpointer(base, save_interval=datetime.timedelta(seconds=4), step_policy=100)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    init = np.random.default_rng(1)
    params = {"w": jax.device_put(init.normal(size=(4, 6)).astype(np.float32), NamedSharding(mesh, P(None, "data"))),
              "v": jax.device_put(init.normal(size=(6,)).astype(np.float32), NamedSharding(mesh, P("data")))}
    batch = NamedSharding(mesh, P("data"))
    for step in range(1, 7):
        x = data.normal(size=(4, 4)).astype(np.float32)
        y = np.cos(x.sum(axis=1)).astype(np.float32)
        params, loss = train_step(params, jax.make_array_from_process_local_data(batch, x),
                                  jax.make_array_from_process_local_data(batch, y))
        time.sleep(STEP_SECONDS)
        checkpointer.on_step(step, params)
    print("RESULT saved_steps", checkpointer.saved)
    print("RESULT final_loss", round(float(loss), 5))


if __name__ == "__main__":
    main()
