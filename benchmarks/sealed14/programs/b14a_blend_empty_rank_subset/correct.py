# Weighted blend of repeated sub-datasets, each split across ranks: empty rank splits are left out of the blend
# Source: https://github.com/NVIDIA/Megatron-Energon/pull/6
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
SUBSETS = {"web": (40, 0.7), "code": (1, 0.3)}        # name -> (total samples, blend weight)


class RankSplit:
    """The samples of one sub-dataset that belong to this rank (offsets as in the webdataset sharder)."""

    def __init__(self, name, total, rank, world):
        per_rank = total / world
        self.start, self.stop = int(rank * per_rank), int((rank + 1) * per_rank)
        self.name = name
        seed = sum(map(ord, name))
        self.data = np.random.default_rng(seed).normal(size=(total, 3)).astype(np.float32)

    def __len__(self):
        return self.stop - self.start

    def __iter__(self):
        for i in range(self.start, self.stop):
            yield self.data[i]


def repeat(ds):
    while True:
        for sample in ds:
            yield sample


class BlendDataset:
    def __init__(self, splits_and_weights, seed):
        splits_and_weights = [(s, w) for s, w in splits_and_weights if len(s) > 0]   # skip empty rank splits
        self.splits = [s for s, _ in splits_and_weights]
        w = np.array([w for _, w in splits_and_weights], np.float64)
        self.weights = w / w.sum()
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        streams = [repeat(s) for s in self.splits]
        while True:
            k = self.rng.choice(len(streams), p=self.weights)
            yield next(streams[k])


def batches(blend, batch_size):
    it = iter(blend)
    while True:
        yield np.stack([next(it) for _ in range(batch_size)])


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w_: jnp.mean((jnp.sum(x * w_, axis=1) - 1.0) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    rank, world = jax.process_index(), jax.process_count()
    splits = [(RankSplit(n, total, rank, world), weight) for n, (total, weight) in SUBSETS.items()]
    blend = BlendDataset(splits, seed=11 + rank)
    w = jax.device_put(jnp.zeros(3), REPL)
    losses = []
    for step, local in zip(range(5), batches(blend, batch_size=4)):
        w, loss = train_step(w, jax.make_array_from_process_local_data(ROWS, local))
        losses.append(round(float(loss), 5))
    multihost_utils.sync_global_devices("done")
    print("RESULT losses", losses)
    print("RESULT w", np.round(np.asarray(w), 5).tolist())


if __name__ == "__main__":
    main()
