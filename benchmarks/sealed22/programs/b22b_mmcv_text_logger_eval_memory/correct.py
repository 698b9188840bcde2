import os
import resource
import time
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class LogBuffer:
    def __init__(self):
        self.val_history, self.output, self.ready = OrderedDict(), OrderedDict(), False

    def update(self, vars):
        for k, v in vars.items():
            self.val_history.setdefault(k, []).append(v)

    def average(self):
        self.output = OrderedDict((k, float(np.mean(v))) for k, v in self.val_history.items())
        self.ready = True

    def clear(self):
        self.val_history.clear(), self.output.clear()
        self.ready = False


class TextLoggerHook:
    def __init__(self, interval=2):
        self.interval = interval

    def _get_max_memory(self, runner):
        mem_mb = np.int32(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
        if runner.world_size > 1:
            mem_mb = np.asarray(multihost_utils.process_allgather(mem_mb)).max()
        return int(mem_mb)

    def log(self, runner):
        log_str = f"Epoch [{runner.epoch + 1}][{runner.inner_iter + 1}]\t"
        if "time" in runner.log_buffer.output:
            log_str += f"memory: {self._get_max_memory(runner)}, "
        log_str += ", ".join(f"{k}: {v:.4f}" for k, v in runner.log_buffer.output.items())
        if runner.rank == 0:
            print(log_str)

    def after_train_iter(self, runner):
        if (runner.inner_iter + 1) % self.interval == 0:
            runner.log_buffer.average()
        if runner.log_buffer.ready:
            self.log(runner)
            runner.log_buffer.clear()

    def after_train_epoch(self, runner):
        if runner.log_buffer.ready:
            self.log(runner)
            runner.log_buffer.clear()


class EvalHook:
    """Single-GPU evaluation on rank 0 after each epoch."""

    def __init__(self, val_data):
        self.val_data = val_data

    def after_train_epoch(self, runner):
        if runner.rank != 0:
            return
        x, y = self.val_data
        acc = float(np.mean((np.asarray(x @ runner.params) > 0) == y))
        runner.log_buffer.output["val_acc"] = acc
        runner.log_buffer.ready = True


class Runner:
    def __init__(self, params, lr=0.3, max_epochs=2):
        self.params, self.lr, self.max_epochs = params, lr, max_epochs
        self.rank, self.world_size = jax.process_index(), jax.process_count()
        self.mode, self.epoch, self.inner_iter = "train", 0, 0
        self.log_buffer = LogBuffer()
        self.hooks = []
        self._grad = jax.jit(jax.value_and_grad(
            lambda w, x, y: jnp.mean(jnp.logaddexp(0.0, x @ w) - y * (x @ w))))

    def call_hook(self, name):
        for hook in self.hooks:
            getattr(hook, name, lambda runner: None)(self)

    def train(self, data_loader):
        self.mode = "train"
        for self.inner_iter, (x, y) in enumerate(data_loader):
            t0 = time.time()
            loss, g = self._grad(self.params, x, y)
            g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
            self.params = self.params - self.lr * g
            self.log_buffer.update({"loss": float(loss), "time": time.time() - t0, "data_time": 0.0})
            self.call_hook("after_train_iter")
        self.call_hook("after_train_epoch")
        self.epoch += 1

    def run(self, data_loader):
        while self.epoch < self.max_epochs:
            self.train(data_loader)


def make_loader(rank, num_batches=4, batch_size=8):
    rng = np.random.default_rng(3 + rank)
    true_w = np.array([1.0, -2.0, 0.5], np.float32)
    out = []
    for _ in range(num_batches):
        x = rng.normal(size=(batch_size, 3)).astype(np.float32)
        out.append((x, (x @ true_w > 0).astype(np.float32)))
    return out


def main():
    rng = np.random.default_rng(11)
    x_val = rng.normal(size=(32, 3)).astype(np.float32)
    val_data = (x_val, x_val @ np.array([1.0, -2.0, 0.5], np.float32) > 0)
    runner = Runner(jnp.zeros(3))
    runner.hooks = [EvalHook(val_data), TextLoggerHook(interval=2)]
    runner.run(make_loader(runner.rank))
    w = np.asarray(multihost_utils.process_allgather(np.asarray(runner.params)))
    print("RESULT epochs", runner.epoch)
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
