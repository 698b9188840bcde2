# Early stopping in a data-parallel loop (fixed): a local stop decision is shared through a flag reduced over all processes
# Source: https://github.com/huggingface/accelerate/pull/1940 (port of the Accelerate/DDP
# early-stopping hang it fixes, to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
REPL = NamedSharding(MESH, P())


class EarlyStopping:
    def __init__(self, patience: int = 1, min_delta: float = 0.0):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.bad_epochs = float("inf"), 0

    def should_stop(self, loss: float) -> bool:
        if loss < self.best * (1.0 - self.min_delta):  # relative improvement
            self.best, self.bad_epochs = loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.2 * g, loss


def to_global(local):
    return multihost_utils.host_local_array_to_global_array(local, MESH, P("data"))


def local_eval_loss(w, x, y) -> float:
    # evaluated on this process's own validation shard only
    return float(np.mean((x @ np.asarray(w) - y) ** 2))


def check_breakpoint(local_flag: bool) -> bool:
    """Accelerator.set_breakpoint/check_breakpoint: stop when any process asked to stop."""
    flags = multihost_utils.process_allgather(np.array(int(local_flag), np.int32))
    return bool(np.asarray(flags).max() > 0)


def main():
    pid = jax.process_index()
    rng = np.random.default_rng(3)
    true_w = rng.normal(size=(3,)).astype(np.float32)
    train_x = rng.normal(size=(jax.process_count(), 8, 3)).astype(np.float32)
    train_y = train_x @ true_w
    vrng = np.random.default_rng(50 + pid)  # each process holds a different validation shard
    val_x = vrng.normal(size=(6, 3)).astype(np.float32)
    val_y = val_x @ true_w + (0.0 if pid == 0 else 3.0) * vrng.normal(size=(6,)).astype(np.float32)
    w = jax.device_put(jnp.zeros(3, jnp.float32), REPL)
    stopper = EarlyStopping(patience=1, min_delta=0.1)
    epochs_run = 0
    for epoch in range(8):
        w, loss = train_step(w, to_global(train_x[pid]), to_global(train_y[pid]))
        epochs_run += 1
        if check_breakpoint(stopper.should_stop(local_eval_loss(w, val_x, val_y))):
            break
    final = multihost_utils.process_allgather(np.asarray(w))
    print(f"RESULT epochs {epochs_run}", flush=True)
    print(f"RESULT w {np.round(np.asarray(final)[0], 4).tolist()}", flush=True)


if __name__ == "__main__":
    main()
