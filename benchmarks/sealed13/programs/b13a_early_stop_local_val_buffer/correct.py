# Averaged log values are broadcast from process 0 before the early-stopping hook reads them
# Source: https://github.com/ppln-team/ppln/pull/43
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
TRUE_W = np.array([1.5, -0.5], np.float32)


class LogBuffer:
    def __init__(self):
        self.values, self.output = {}, {}

    def update(self, **kw):
        for k, v in kw.items():
            self.values.setdefault(k, []).append(v)

    def average(self):
        self.output = {k: float(np.mean(v)) for k, v in self.values.items()}
        self.values = {}
        for key in sorted(self.output):  # every process uses process 0's averaged values
            self.output[key] = float(multihost_utils.broadcast_one_to_all(np.float32(self.output[key])))


class EarlyStoppingHook:
    def __init__(self, monitor="val_loss", patience=2):
        self.monitor, self.patience = monitor, patience
        self.best, self.wait = np.inf, 0

    def after_val_epoch(self, runner):
        metric = runner.log_buffer.output[self.monitor]
        if metric < self.best:
            self.best, self.wait = metric, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                runner.stop_training = True


@jax.jit
def train_step(w, x, y):
    return w - 0.05 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def local_data(split, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    scale = np.float32(0.6) if (split == "val" and jax.process_index() == 1) else np.float32(1.0)
    return x, x @ (TRUE_W * scale)   # host 1's validation shard comes from a drifted slice of the data


class Runner:
    def __init__(self, max_epochs=8):
        self.max_epochs, self.epoch, self.stop_training = max_epochs, 0, False
        self.log_buffer = LogBuffer()
        self.hooks = [EarlyStoppingHook()]
        self.w = jax.device_put(np.zeros(2, np.float32), REPL)

    def train_epoch(self):
        for step in range(4):
            x, y = local_data("train", 8, 100 * jax.process_index() + 10 * self.epoch + step)
            gx, gy = (jax.make_array_from_process_local_data(DATA, a) for a in (x, y))
            self.w = train_step(self.w, gx, gy)

    def val_epoch(self):
        w = np.asarray(self.w.addressable_data(0))
        for step in range(2):
            x, y = local_data("val", 8, 7 + 1000 * jax.process_index() + step)
            self.log_buffer.update(val_loss=float(np.mean((x @ w - y) ** 2)))
        self.log_buffer.average()
        for hook in self.hooks:
            hook.after_val_epoch(self)

    def run(self):
        while self.epoch < self.max_epochs and not self.stop_training:
            self.train_epoch()
            self.val_epoch()
            self.epoch += 1
        multihost_utils.sync_global_devices("training finished")


def main():
    runner = Runner()
    runner.run()
    print("RESULT epochs", runner.epoch)
    print("RESULT weights", np.round(np.asarray(runner.w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
