# SeqIO-style FileDataSource: each host shards the file list as its filesystem listed it, with no guaranteed order across hosts
# Source: https://github.com/google/seqio/commit/8861115d3b8a07c4707bbcfb9c39c90e9fbfb61f
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FILES = {"train-00000-of-00004": 6, "train-00001-of-00004": 6, "train-00002-of-00004": 2, "train-00003-of-00004": 2}
# The object store lists a prefix in no guaranteed order; these are the orders each host happened to get.
LISTING_ORDER = {0: [0, 1, 2, 3], 1: [0, 2, 1, 3]}
BATCH = 2


def write_dataset(root):
    root.mkdir(parents=True, exist_ok=True)
    names = sorted(FILES)
    for i, name in enumerate(names):
        rows = [{"x": [float(i + j), float(j % 3)], "y": float(i - j)} for j in range(FILES[name])]
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return names


def glob_remote(root, pattern):
    """Stand-in for the remote filesystem's glob: the listing order is whatever the store returns."""
    matched = [p for p in root.iterdir() if p.match(pattern)]
    by_name = {p.name: p for p in matched}
    names = sorted(by_name)
    return [str(by_name[names[i]]) for i in LISTING_ORDER[jax.process_index()] if i < len(names)]


def _list_files(root, pattern):
    return glob_remote(root, pattern)


class FileDataSource:
    def __init__(self, root, pattern):
        self.files = _list_files(root, pattern)

    def get_dataset(self, shard_id, num_shards):
        for path in self.files[shard_id::num_shards]:
            for line in Path(path).read_text().splitlines():
                row = json.loads(line)
                yield np.asarray(row["x"], np.float32), np.float32(row["y"])


def batched(examples, batch_size):
    xs, ys = [], []
    for x, y in examples:
        xs.append(x)
        ys.append(y)
        if len(xs) == batch_size:
            yield np.stack(xs), np.asarray(ys, np.float32)
            xs, ys = [], []


@jax.jit
def train_step(w, x, y):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.01 * grad, loss


def main():
    root = Path(tempfile.gettempdir()) / "mcjax_sealed16_unsorted_glob_file_shards" / os.environ.get("JOB_ID", "0")
    if jax.process_index() == 0:
        write_dataset(root)
    multihost_utils.sync_global_devices("dataset_written")
    source = FileDataSource(root, "train-*-of-00004.jsonl")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.zeros((2,), np.float32), NamedSharding(mesh, P()))
    steps = 0
    for x, y in batched(source.get_dataset(jax.process_index(), jax.process_count()), BATCH):
        w, loss = train_step(w, jax.make_array_from_process_local_data(batch, x),
                             jax.make_array_from_process_local_data(batch, y))
        steps += 1
    print("RESULT steps", steps)
    print("RESULT w", np.round(np.asarray(multihost_utils.process_allgather(w, tiled=True)), 5).tolist())


if __name__ == "__main__":
    main()
