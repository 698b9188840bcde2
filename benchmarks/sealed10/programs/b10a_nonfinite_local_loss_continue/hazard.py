# A process whose local loss is non-finite skips the batch with `continue`; the others enter the gradient all-reduce
# Source: https://github.com/Project-MONAI/monai-physio/pull/137
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES, LOCAL_BATCH, EPOCHS, LR = 4, 4, 2, 0.05


def iter_batches(epoch):
    """Disjoint samples per process; process 1's shard holds one corrupted recording (NaN) in epoch 1, batch 1."""
    rng = np.random.default_rng(100 * epoch + jax.process_index())
    for b in range(3):
        x = rng.standard_normal((LOCAL_BATCH, FEATURES)).astype(np.float32)
        y = (x @ np.arange(1, FEATURES + 1, dtype=np.float32)).astype(np.float32)
        if epoch == 1 and b == 1 and jax.process_index() == 1:
            x[2, 1] = np.nan
        yield x, y


def local_loss(w_host, x, y):
    """Host-side loss on this process's own batch (no communication)."""
    return float(np.mean((x @ w_host - y) ** 2))


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)  # mean over the global batch: an all-reduce across processes
    return w - LR * g, loss


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    data = NamedSharding(mesh, P("batch"))
    w = jax.device_put(np.zeros((FEATURES,), np.float32), NamedSharding(mesh, P()))
    steps, skipped = 0, 0
    for epoch in range(EPOCHS):
        for x, y in iter_batches(epoch):
            loss = local_loss(np.asarray(w.addressable_data(0)), x, y)
            if not np.isfinite(loss):
                print(f"epoch {epoch}: non-finite loss ({loss}); skipping this batch")
                skipped += 1
                continue
            gx = jax.make_array_from_process_local_data(data, x)
            gy = jax.make_array_from_process_local_data(data, y)
            w, gloss = train_step(w, gx, gy)
            steps += 1
    print("RESULT steps", steps)
    print("RESULT w", [round(float(v), 4) for v in np.asarray(w.addressable_data(0))])


main()
