# Validation runs on rank 0 only while the other ranks wait at a barrier; the model forward is sharded
# Source: https://github.com/pytorch/pytorch/issues/54059
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CLASSES, DIM, PER_HOST = 4, 6, 8


class Classifier:
    """A linear image classifier trained data-parallel over a global mesh (the DDP-wrapped model)."""

    def __init__(self, mesh):
        self.rows = NamedSharding(mesh, P("data"))
        self.params = jax.device_put(jnp.zeros((DIM, NUM_CLASSES)), NamedSharding(mesh, P()))
        self._step = jax.jit(self._train_step)
        self._eval = jax.jit(self._eval_step)

    @staticmethod
    def _loss(params, x, y):
        logits = x @ params
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def _train_step(self, params, x, y):
        return params - 0.5 * jax.grad(self._loss)(params, x, y)

    @staticmethod
    def _eval_step(params, x, y):
        return jnp.mean((jnp.argmax(x @ params, axis=1) == y).astype(jnp.float32))  # global mean

    def global_batch(self, x, y):
        return (jax.make_array_from_process_local_data(self.rows, x),
                jax.make_array_from_process_local_data(self.rows, y))

    def fit_batch(self, x, y):
        self.params = self._step(self.params, *self.global_batch(x, y))

    def accuracy(self, x, y):
        return float(self._eval(self.params, *self.global_batch(x, y)))


def local_batch(split, step):
    rng = np.random.default_rng(1000 * (split == "val") + 10 * step + jax.process_index())
    x = rng.normal(size=(PER_HOST, DIM)).astype(np.float32)
    y = (np.argmax(x[:, :NUM_CLASSES], axis=1)).astype(np.int32)
    return x, y


def validate(model, step):
    accs = [model.accuracy(*local_batch("val", step + k)) for k in range(3)]
    return float(np.mean(accs))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    model = Classifier(mesh)
    history = []
    for epoch in range(3):
        for step in range(5):
            model.fit_batch(*local_batch("train", 5 * epoch + step))
        acc = 0.0
        if jax.process_index() == 0:
            acc = validate(model, epoch)
            print(f"epoch {epoch}: val acc {acc:.3f}")
        multihost_utils.sync_global_devices(f"after_validation_{epoch}")
        history.append(round(acc, 4))
    history = multihost_utils.broadcast_one_to_all(np.asarray(history, np.float32))
    print("RESULT val_acc", np.round(history, 4).tolist())


main()
