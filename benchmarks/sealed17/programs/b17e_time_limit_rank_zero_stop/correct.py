# Anemoi-style TimeLimit callback: process 0's wall-clock stop decision is broadcast so every process stops together
# Source: https://github.com/ecmwf/anemoi-core/pull/1064
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import functools
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"max_epochs": 40, "steps_per_epoch": 3, "time_limit_s": 1.0, "io_wait_s": 0.04}


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if jax.process_index() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped


class Trainer:
    def __init__(self):
        self.should_stop = False
        self.epoch = 0


class TimeLimit:
    def __init__(self, limit_s):
        self.limit_s = limit_s
        self._start_time = time.time()

    def on_validation_end(self, trainer):
        decided = self._run_stopping_check(trainer)
        flag = np.array(bool(decided), dtype=np.bool_)
        trainer.should_stop = bool(multihost_utils.broadcast_one_to_all(flag))

    @rank_zero_only
    def _run_stopping_check(self, trainer):
        if time.time() - self._start_time < self.limit_s:
            return False
        print(f"time limit of {self.limit_s}s reached at epoch {trainer.epoch}; stopping", flush=True)
        return True


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w"]) @ p["v"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


@jax.jit
def val_loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w"]) @ params["v"] - y) ** 2)


def load_batch(rng, n):
    time.sleep(CONFIG["io_wait_s"])  # reading the next sample files
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return x, np.sin(x @ np.arange(1, 6, dtype=np.float32) / 5).astype(np.float32)


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    init = np.random.default_rng(0)
    params = {"w": init.normal(size=(5, 8)).astype(np.float32) * 0.3,
              "v": init.normal(size=(8,)).astype(np.float32) * 0.3}
    params = jax.tree.map(lambda a: jax.device_put(a, rep), params)
    rng = np.random.default_rng(7 + jax.process_index())
    put = lambda a: jax.make_array_from_process_local_data(batch, a)  # noqa: E731
    trainer, callback = Trainer(), TimeLimit(CONFIG["time_limit_s"])
    val_x, val_y = load_batch(np.random.default_rng(99 + jax.process_index()), 8)
    while trainer.epoch < CONFIG["max_epochs"] and not trainer.should_stop:
        for _ in range(CONFIG["steps_per_epoch"]):
            x, y = load_batch(rng, 4)
            params, loss = train_step(params, put(x), put(y))
        vloss = float(val_loss(params, put(val_x), put(val_y)))
        trainer.epoch += 1
        callback.on_validation_end(trainer)
    # end of fit: gather the full weights for the final checkpoint
    final = {k: multihost_utils.process_allgather(v, tiled=True) for k, v in sorted(params.items())}
    print("RESULT epochs_run", trainer.epoch)
    print("RESULT final_val_loss", round(vloss, 5))
    print("RESULT v_checksum", round(float(np.sum(np.asarray(final["v"]))), 5))


if __name__ == "__main__":
    main()
