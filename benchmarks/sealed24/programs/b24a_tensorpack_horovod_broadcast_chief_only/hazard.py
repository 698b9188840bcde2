# A tensorpack-style Horovod trainer: it all-reduces the gradients of every step and contributes
# a callback that re-broadcasts the variables of worker 0 (weights and BatchNorm moving
# statistics) at the end of each epoch.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Callback:
    _chief_only = True

    def setup_graph(self, trainer):
        self.trainer = trainer

    @property
    def chief_only(self):
        return self._chief_only

    def set_chief_only(self, v=True):
        self._chief_only = v
        return self

    def trigger(self):
        pass


class CallbackFactory(Callback):
    def __init__(self, trigger=None):
        self._cb_trigger = trigger

    def trigger(self):
        if self._cb_trigger is not None:
            self._cb_trigger(self)


class ScalarPrinter(Callback):
    def trigger(self):
        print(f"[chief] epoch {self.trainer.epoch_num}: loss={self.trainer.last_loss:.4f}")


class HorovodTrainer:
    def __init__(self, model, steps_per_epoch, lr=0.1):
        self.rank = jax.process_index()
        self.is_chief = self.rank == 0
        self.model = model
        self.steps_per_epoch = steps_per_epoch
        self.lr = lr
        self._callbacks = []
        self.epoch_num = 0
        self.last_loss = float("nan")
        self._grad = jax.jit(jax.value_and_grad(model.loss))

    def allreduce(self, grads):
        flat, tree = jax.tree_util.tree_flatten(grads)
        out = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for g in flat]
        return jax.tree_util.tree_unflatten(tree, out)

    def _setup_graph(self):
        def broadcast(self):
            print("Running horovod broadcast ...")
            self.trainer.variables = multihost_utils.broadcast_one_to_all(self.trainer.variables)

        cb = CallbackFactory(trigger=broadcast)
        return [cb]

    def register_callback(self, cb):
        if not self.is_chief and cb.chief_only:
            return
        cb.setup_graph(self)
        self._callbacks.append(cb)

    def train(self, dataflow, callbacks, max_epoch):
        self.variables = {"params": self.model.init_params(), "bn_mean": np.zeros(4, np.float32)}
        for cb in list(callbacks) + self._setup_graph():
            self.register_callback(cb)
        self.variables = multihost_utils.broadcast_one_to_all(self.variables)
        for self.epoch_num in range(1, max_epoch + 1):
            for _ in range(self.steps_per_epoch):
                x, y = next(dataflow)
                bn = self.variables["bn_mean"]
                self.variables["bn_mean"] = 0.9 * bn + 0.1 * x.mean(0)
                loss, grads = self._grad(self.variables["params"], x, y)
                grads = self.allreduce(grads)
                self.variables["params"] = jax.tree_util.tree_map(
                    lambda p, g: np.asarray(p) - self.lr * g, self.variables["params"], grads)
                self.last_loss = float(loss)
            for cb in self._callbacks:
                cb.trigger()


class LinearModel:
    @staticmethod
    def init_params():
        return {"w": np.zeros(4, np.float32), "b": np.zeros((), np.float32)}

    @staticmethod
    def loss(params, x, y):
        pred = x @ params["w"] + params["b"]
        return jnp.mean((pred - y) ** 2)


def imagenet_shard(rank, batch=16):
    rng = np.random.default_rng(2018 + rank)
    true_w = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    while True:
        x = rng.normal(loc=0.1 * rank, size=(batch, 4)).astype(np.float32)
        yield x, (x @ true_w + 0.3).astype(np.float32)


def main():
    rank = jax.process_index()
    trainer = HorovodTrainer(LinearModel(), steps_per_epoch=5)
    trainer.train(imagenet_shard(rank), callbacks=[ScalarPrinter()], max_epoch=3)
    v = trainer.variables
    print("RESULT epochs", trainer.epoch_num)
    print("RESULT w", np.round(np.asarray(v["params"]["w"]), 4).tolist())
    print("RESULT bn_mean", np.round(np.asarray(v["bn_mean"]), 4).tolist())


if __name__ == "__main__":
    main()
