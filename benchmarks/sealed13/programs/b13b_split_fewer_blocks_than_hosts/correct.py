# A small dataset read as a single block is re-chunked by rows before it is split across hosts, so every host gets rows
# Source: https://github.com/ray-project/ray/issues/19644
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_ROWS, FEAT, BATCH, EPOCHS, LR = 25, 4, 4, 3, 0.1
ROWS_PER_BLOCK = 4096  # the reader packs up to this many rows into one block
MESH = Mesh(np.array(jax.devices()), ("data",))
WORKDIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_split_fewer_blocks", os.environ.get("JOB_ID", "local"))


def write_test_csv(path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(NUM_ROWS, FEAT))
    y = x @ np.array([0.5, -1.0, 2.0, 0.25]) + 0.05 * rng.normal(size=NUM_ROWS)
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", fmt="%.6f")


def read_csv_blocks(path):
    data = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)
    return [data[s:s + ROWS_PER_BLOCK] for s in range(0, len(data), ROWS_PER_BLOCK)]


def split(blocks, n):
    """Split a dataset into n shards of whole blocks (equal=False); fewer blocks than shards are cut by rows first."""
    if len(blocks) < n:
        blocks = np.array_split(np.concatenate(blocks), n)
    return [blocks[i::n] for i in range(n)]


def iter_batches(shard, batch_size):
    rows = np.concatenate(shard) if shard else np.zeros((0, FEAT + 1), np.float32)
    for s in range(0, len(rows) - batch_size + 1, batch_size):  # drop_last
        yield rows[s:s + batch_size, :FEAT], rows[s:s + batch_size, FEAT]


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def train_loop_per_worker(shard):
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((FEAT,), jnp.float32)
    history = []
    for epoch in range(EPOCHS):
        losses = []
        for bx, by in iter_batches(shard, BATCH):
            x = jax.make_array_from_process_local_data(sharding, bx)
            y = jax.make_array_from_process_local_data(sharding, by)
            w, loss = train_step(w, x, y)
            losses.append(float(loss))
        history.append(np.mean(losses) if losses else float("nan"))
    return w, history


def main():
    os.makedirs(WORKDIR, exist_ok=True)
    path = os.path.join(WORKDIR, "train.csv")
    if jax.process_index() == 0:
        write_test_csv(path)
    multihost_utils.sync_global_devices("csv_written")
    blocks = read_csv_blocks(path)
    shard = split(blocks, jax.process_count())[jax.process_index()]
    w, history = train_loop_per_worker(shard)
    multihost_utils.sync_global_devices("training_done")
    print("RESULT epoch_loss", [round(float(h), 5) for h in history])
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()
