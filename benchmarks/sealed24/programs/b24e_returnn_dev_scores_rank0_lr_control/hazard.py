import os
from dataclasses import dataclass, field
from typing import Dict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

config = {
    "learning_rate": 0.05,
    "newbob_relative_error_threshold": -0.05,
    "newbob_learning_rate_decay": 0.5,
    "num_epochs": 8,
    "batch_size": 16,
}


@dataclass
class EpochData:
    learning_rate: float
    error: Dict[str, float] = field(default_factory=dict)


class NewbobRelative:
    """Learning rate control: decay the LR when the relative score improvement is too small."""

    def __init__(self, cfg):
        self.default_learning_rate = cfg["learning_rate"]
        self.relative_error_threshold = cfg["newbob_relative_error_threshold"]
        self.learning_rate_decay = cfg["newbob_learning_rate_decay"]
        self.epoch_data: Dict[int, EpochData] = {}

    def get_epoch_error_key(self, epoch):
        error = self.epoch_data[epoch].error
        return "dev_score" if "dev_score" in error else "train_score"

    def get_epoch_error_value(self, epoch):
        return self.epoch_data[epoch].error[self.get_epoch_error_key(epoch)]

    def set_epoch_error(self, epoch, error):
        self.epoch_data[epoch].error.update(error)

    def get_learning_rate_for_epoch(self, epoch):
        if epoch in self.epoch_data:
            return self.epoch_data[epoch].learning_rate
        if epoch == 1:
            lr = self.default_learning_rate
        else:
            last_lr = self.get_learning_rate_for_epoch(epoch - 1)
            lr = last_lr
            if epoch >= 3:
                old, new = self.get_epoch_error_value(epoch - 2), self.get_epoch_error_value(epoch - 1)
                relative_error = (new - old) / abs(old)
                if relative_error > self.relative_error_threshold:
                    lr = last_lr * self.learning_rate_decay
        self.epoch_data[epoch] = EpochData(learning_rate=lr)
        return lr


def make_data(rank, n=96, dim=6):
    rng = np.random.default_rng(2024)
    w_true = rng.normal(size=dim)
    shard = np.random.default_rng(50 + rank)
    x = shard.normal(size=(n, dim)).astype(np.float32)
    y = (x @ w_true + 0.1 * shard.normal(size=n)).astype(np.float32)
    dev_x = rng.normal(size=(64, dim)).astype(np.float32)
    dev_y = (dev_x @ (w_true + 0.8 * rng.normal(size=dim))).astype(np.float32)
    return (x, y), (dev_x, dev_y)


def mse(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


value_and_grad = jax.jit(jax.value_and_grad(mse))
dev_loss = jax.jit(mse)


class Engine:
    def __init__(self, cfg, rank, world_size):
        self.config = cfg
        self.rank, self.world_size = rank, world_size
        self.learning_rate_control = NewbobRelative(cfg)
        (self.train_x, self.train_y), (self.dev_x, self.dev_y) = make_data(rank)
        self.params = {"w": jnp.zeros(self.train_x.shape[1]), "b": jnp.zeros(())}
        self.epoch = 0

    def _all_reduce_grads(self, grads):
        return jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)

    def train_epoch(self):
        self.epoch += 1
        self.learning_rate = self.learning_rate_control.get_learning_rate_for_epoch(self.epoch)
        losses = []
        bs = self.config["batch_size"]
        for start in range(0, len(self.train_x), bs):
            loss, grads = value_and_grad(self.params, self.train_x[start:start + bs], self.train_y[start:start + bs])
            grads = self._all_reduce_grads(grads)
            self.params = jax.tree_util.tree_map(lambda p, g: p - self.learning_rate * g, self.params, grads)
            losses.append(float(loss))
        self.learning_rate_control.set_epoch_error(self.epoch, {"train_score": float(np.mean(losses))})
        self.eval_model()

    def eval_model(self):
        if self.world_size > 1 and self.rank != 0:
            return
        score = float(dev_loss(self.params, self.dev_x, self.dev_y))
        self.learning_rate_control.set_epoch_error(self.epoch, {"dev_score": score})
        print(f"epoch {self.epoch} dev_score {score:.4f}")

    def train(self):
        while self.epoch < self.config["num_epochs"]:
            self.train_epoch()
            print(f"rank {self.rank} epoch {self.epoch} lr {self.learning_rate:.5f}")


def main():
    engine = Engine(config, jax.process_index(), jax.process_count())
    engine.train()
    lrs = [engine.learning_rate_control.epoch_data[e].learning_rate for e in sorted(engine.learning_rate_control.epoch_data)]
    w = np.asarray(multihost_utils.process_allgather(np.asarray(engine.params["w"])))
    print("RESULT learning_rates", [round(lr, 6) for lr in lrs])
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
