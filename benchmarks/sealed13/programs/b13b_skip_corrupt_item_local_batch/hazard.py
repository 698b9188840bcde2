# Each host decodes its own shard of image files and drops the ones that fail to decode from the batch
# Source: https://github.com/fastai/fastai/issues/3275
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_FILES, PIX, BATCH, LR, EPOCHS = 24, 16, 4, 0.1, 2
CORRUPT = {5}  # a truncated download in the image folder
MESH = Mesh(np.array(jax.devices()), ("data",))
ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_skip_corrupt_item", os.environ.get("JOB_ID", "local"))


class SkipItemException(Exception):
    pass


def write_image_folder(root):
    rng = np.random.default_rng(0)
    for i in range(NUM_FILES):
        img = rng.random(PIX).astype(np.float32) + (i % 2)
        path = os.path.join(root, f"img_{i:03d}_{i % 2}.npy")
        np.save(path, img)
        if i in CORRUPT:
            with open(path, "r+b") as f:
                f.truncate(40)


def create_image(path):
    """Decode an image; unreadable files raise SkipItemException."""
    try:
        img = np.load(path)
    except (ValueError, OSError, EOFError) as e:
        raise SkipItemException(path) from e
    label = int(path[-5])
    return img, np.float32(label), np.float32(1.0)


def create_batch(paths):
    items = []
    for p in paths:
        try:
            items.append(create_image(p))
        except SkipItemException:
            continue
    return tuple(np.stack(col) for col in zip(*items))


@jax.jit
def train_step(w, x, y, m):
    def loss_fn(w):
        p = jax.nn.sigmoid(x @ w - 4.0)
        nll = -(y * jnp.log(p + 1e-6) + (1 - y) * jnp.log(1 - p + 1e-6))
        return jnp.sum(nll * m) / jnp.maximum(jnp.sum(m), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - LR * g, loss


def main():
    if jax.process_index() == 0:
        shutil.rmtree(ROOT, ignore_errors=True)
        os.makedirs(ROOT)
        write_image_folder(ROOT)
    multihost_utils.sync_global_devices("images_written")
    files = sorted(os.path.join(ROOT, f) for f in os.listdir(ROOT))
    local = files[jax.process_index()::jax.process_count()]
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((PIX,), jnp.float32)
    for epoch in range(EPOCHS):
        hits = seen = 0.0
        for s in range(0, len(local), BATCH):
            bx, by, bm = create_batch(local[s:s + BATCH])
            put = lambda a: jax.make_array_from_process_local_data(sharding, a)
            w, loss = train_step(w, put(bx), put(by), put(bm))
            pred = (bx @ np.asarray(w) > 4.0).astype(np.float32)
            rows = multihost_utils.process_allgather(np.stack([pred, by, bm], axis=1))  # metric gather
            rows = np.asarray(rows).reshape(-1, 3)
            hits, seen = hits + float(((rows[:, 0] == rows[:, 1]) * rows[:, 2]).sum()), seen + float(rows[:, 2].sum())
        print("RESULT epoch", epoch, "accuracy", round(hits / seen, 4), "seen", seen)
    multihost_utils.sync_global_devices("training_done")
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w_sum", round(float(jnp.sum(w)), 4))


main()
