import dataclasses
import enum
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DropRemainder(enum.Enum):
    DROP = "drop"
    PAD = "pad"


class RangeDataSource:
    def __init__(self, start, stop):
        self.items = np.arange(start, stop)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return RangeDataSource.from_items(self.items[idx])

    def repeat(self, n):
        return RangeDataSource.from_items(np.tile(self.items, n))

    @staticmethod
    def from_items(items):
        ds = RangeDataSource(0, 0)
        ds.items = np.asarray(items)
        return ds


@dataclasses.dataclass
class DataSource:
    data_source: RangeDataSource
    batch_size: int
    batch_drop_remainder: DropRemainder = DropRemainder.PAD
    shard_by_process: bool = True

    @property
    def host_batch_size(self):
        return self.batch_size // jax.process_count()

    def ds_for_current_process(self):
        ds = self.data_source
        # Shard the dataset
        if self.shard_by_process:
            ds = ds[jax.process_index()::jax.process_count()]
        return ds

    def __iter__(self):
        ds = self.ds_for_current_process()
        bs = self.host_batch_size
        for start in range(0, len(ds), bs):
            chunk = ds.items[start:start + bs]
            if len(chunk) < bs and self.batch_drop_remainder == DropRemainder.DROP:
                return
            mask = np.zeros(bs, np.float32)
            mask[:len(chunk)] = 1.0
            yield {"x": np.pad(chunk, (0, bs - len(chunk))).astype(np.float32), "mask": mask}


def make_global(batch, sharding):
    return {k: jax.make_array_from_process_local_data(sharding, v) for k, v in batch.items()}


@jax.jit
def eval_step(w, batch):
    pred = jnp.tanh(batch["x"][:, None] * w).sum(-1)
    target = jnp.sin(batch["x"])
    return {"sq_err": jnp.sum((pred - target) ** 2 * batch["mask"]), "count": jnp.sum(batch["mask"])}


def evaluate(w, ds, sharding):
    totals = {"sq_err": 0.0, "count": 0.0}
    num_batches = 0
    for batch in ds:
        out = eval_step(w, make_global(batch, sharding))
        totals = {k: totals[k] + float(np.asarray(out[k].addressable_data(0))) for k in totals}
        num_batches += 1
    return totals["sq_err"] / totals["count"], num_batches


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.linspace(-0.5, 0.5, 4), NamedSharding(mesh, P()))
    ds = DataSource(RangeDataSource(0, 9), batch_size=4, batch_drop_remainder=DropRemainder.PAD)
    mse, num_batches = evaluate(w, ds, sharding)
    print(f"process {jax.process_index()}: {num_batches} eval batches")
    print("RESULT eval_mse", round(mse, 5))
    print("RESULT eval_batches", num_batches)


if __name__ == "__main__":
    main()
