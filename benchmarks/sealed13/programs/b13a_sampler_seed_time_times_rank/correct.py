# Distributed sampler seeded with the broadcast config seed, so all processes slice one shared permutation
# Source: https://github.com/NVlabs/LongLive/pull/74
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import time

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


class DistributedSampler:
    """Every replica must use the same seed: its slice is taken from one shared permutation."""

    def __init__(self, num_samples, num_replicas, rank, seed):
        self.num_samples, self.num_replicas, self.rank, self.seed = num_samples, num_replicas, rank, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        perm = np.random.default_rng(self.seed + self.epoch).permutation(self.num_samples)
        return iter(perm[self.rank::self.num_replicas].tolist())


class DiffusionTrainer:
    def __init__(self, config):
        self.config = config
        seed = np.int64(config["seed"] if jax.process_index() == 0 else 0)
        self.seed = int(multihost_utils.broadcast_one_to_all(seed))      # shared seed for model init
        rank, world = jax.process_index(), jax.process_count()
        sampler_seed = self.seed                                          # shared seed for the sampler
        self.local_seed = int(time.time()) * rank                         # rank-local seed for per-rank noise
        self.sampler = DistributedSampler(config["num_samples"], world, rank, sampler_seed)
        data_rng = np.random.default_rng(1234)
        self.dataset = data_rng.normal(size=(config["num_samples"], 4)).astype(np.float32)
        init = np.random.default_rng(self.seed).normal(size=(4,)).astype(np.float32)
        self.w = jax.device_put(init, REPL)
        self._step = jax.jit(self._update, out_shardings=(REPL, REPL))

    @staticmethod
    def _update(w, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.tanh(x @ w) - 0.5) ** 2))(w)
        return w - 0.2 * g, loss

    def train_epoch(self, epoch):
        self.sampler.set_epoch(epoch)
        indices = list(self.sampler)
        seen = multihost_utils.process_allgather(np.asarray(indices, np.int32)).reshape(-1)
        if len(np.unique(seen)) != self.config["num_samples"]:
            raise RuntimeError(f"epoch {epoch}: sampler shards overlap, {len(np.unique(seen))} distinct samples seen")
        losses = []
        bs = self.config["per_process_batch"]
        for start in range(0, len(indices), bs):
            x = self.dataset[indices[start:start + bs]]
            self.w, loss = self._step(self.w, jax.make_array_from_process_local_data(DATA, x))
            losses.append(float(loss))
        return float(np.mean(losses))


def main():
    trainer = DiffusionTrainer({"seed": 17, "num_samples": 16, "per_process_batch": 4})
    epoch_losses = [round(trainer.train_epoch(e), 5) for e in range(2)]
    print("RESULT epoch_losses", epoch_losses)
    print("RESULT w", np.round(np.asarray(trainer.w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
