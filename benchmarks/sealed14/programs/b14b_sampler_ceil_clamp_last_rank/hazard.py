# Benchmark sampler gives each rank ceil(N/size) samples and clamps the last rank, which then runs one batch fewer
# Source: https://github.com/mlcommons/storage/issues/455
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
CONFIG = {"num_samples": 23, "batch_size": 3, "epochs": 2, "record_dim": 4}


class DlioSampler:
    """Contiguous block of sample indices for this rank, replayed every epoch."""

    def __init__(self, rank, size, num_samples, epochs):
        self.rank, self.size, self.epochs = rank, size, epochs
        samples_per_proc = int(math.ceil(num_samples / size))
        start_sample = self.rank * samples_per_proc
        end_sample = (self.rank + 1) * samples_per_proc - 1
        if end_sample > num_samples - 1:
            end_sample = num_samples - 1
        self.indices = list(range(start_sample, end_sample + 1))

    def __iter__(self):
        return iter(self.indices)


class TorchLikeDataLoader:
    def __init__(self, sampler, batch_size, record_dim, drop_last=True):
        self.sampler, self.batch_size, self.record_dim, self.drop_last = sampler, batch_size, record_dim, drop_last

    def read(self, idx):
        return np.random.default_rng(idx).normal(size=(self.record_dim,)).astype(np.float32)

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(self.read(idx))
            if len(batch) == self.batch_size:
                yield np.stack(batch)
                batch = []
        if batch and not self.drop_last:
            yield np.stack(batch)


@jax.jit
def compute_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    rank, size = jax.process_index(), jax.process_count()
    sampler = DlioSampler(rank, size, CONFIG["num_samples"], CONFIG["epochs"])
    loader = TorchLikeDataLoader(sampler, CONFIG["batch_size"], CONFIG["record_dim"])
    w = jax.device_put(np.full((CONFIG["record_dim"],), 0.5, np.float32), REPL)
    steps, loss = 0, jnp.zeros(())
    for epoch in range(CONFIG["epochs"]):
        for batch in loader:
            w, loss = compute_step(w, jax.make_array_from_process_local_data(DATA, batch))
            steps += 1
            multihost_utils.sync_global_devices(f"step {steps}")
        multihost_utils.sync_global_devices(f"end of epoch {epoch}")
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
