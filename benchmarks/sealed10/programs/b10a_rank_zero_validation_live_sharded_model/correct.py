# Every process gathers the sharded weights first; rank-zero validation then runs an unsharded copy
# Source: https://github.com/LibreYOLO/libreyolo/pull/594
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

D_IN, D_OUT, EPOCHS, LR = 8, 3, 2, 0.1


def is_main_process():
    return jax.process_index() == 0


def run_rank_zero_phase(name, fn):
    """Run fn on the main process only; the others receive its result by broadcast."""
    result = np.zeros((2,), np.float32)
    if is_main_process():
        result = np.asarray(fn(), np.float32)
        print(f"{name}: done on rank 0")
    result = multihost_utils.broadcast_one_to_all(result)
    multihost_utils.sync_global_devices(name)
    return result


@jax.jit
def forward(w, x):
    return x @ w  # w is sharded over its input dim across processes: the contraction is an all-reduce


@jax.jit
def train_step(w, x, y):
    g = jax.grad(lambda w: jnp.mean((forward(w, x) - y) ** 2))(w)
    return w - LR * g


def val_set():
    rng = np.random.default_rng(99)
    x = rng.standard_normal((6, D_IN)).astype(np.float32)
    return x, (x[:, :D_OUT] > 0).astype(np.float32)


class Trainer:
    def __init__(self, mesh):
        self.mesh = mesh
        w0 = np.linspace(-0.5, 0.5, D_IN * D_OUT, dtype=np.float32).reshape(D_IN, D_OUT)
        self.w = jax.device_put(w0, NamedSharding(mesh, P("model", None)))  # input dim split over processes

    def _run_validation(self, epoch, w_host):
        x, y = val_set()
        logits = x @ w_host  # plain host copy: no collective inside the rank-zero phase
        return [float(np.mean((logits - y) ** 2)), float(np.mean((logits > 0.5) == y))]

    def validate(self, epoch):
        w_host = np.asarray(multihost_utils.process_allgather(self.w, tiled=True))  # every process joins
        return run_rank_zero_phase(f"validation_epoch_{epoch}", lambda: self._run_validation(epoch, w_host))

    def fit(self):
        rep = NamedSharding(self.mesh, P())
        x_tr, y_tr = val_set()
        for epoch in range(EPOCHS):
            self.w = train_step(self.w, jax.device_put(x_tr, rep), jax.device_put(y_tr, rep))
            loss, acc = self.validate(epoch)
            print("RESULT epoch", epoch, "val_loss", round(float(loss), 5), "val_acc", round(float(acc), 4))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("model",))
    Trainer(mesh).fit()


main()
