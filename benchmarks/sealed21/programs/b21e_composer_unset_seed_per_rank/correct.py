import logging
import os
import random
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

log = logging.getLogger("composer.trainer")
MAX_SEED = 2**32 - 1


def get_random_seed():
    rng = random.Random(int(time.time_ns()))
    return rng.randint(0, MAX_SEED)


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed % MAX_SEED)


class DistributedSampler:
    def __init__(self, dataset_len, num_replicas, rank, seed=0):
        self.dataset_len, self.num_replicas, self.rank, self.seed = dataset_len, num_replicas, rank, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        perm = np.random.default_rng(self.seed + self.epoch).permutation(self.dataset_len)
        return iter(perm[self.rank::self.num_replicas].tolist())


class State:
    def __init__(self, rank_zero_seed, model_params):
        self.rank_zero_seed = rank_zero_seed
        self.params = model_params
        self.seen = []


class Trainer:
    def __init__(self, dataset, max_epochs=2, batch_size=8, lr=0.1, seed=None):
        rank, world = jax.process_index(), jax.process_count()
        if not seed:
            seed = get_random_seed()
            log.info(f"Seed was None. Setting seed to random value: {seed}")
        rank_zero_seed = int(np.asarray(multihost_utils.broadcast_one_to_all(np.uint32(seed))))
        seed = rank_zero_seed + rank
        seed_all(seed)
        self.seed = seed
        self.dataset = dataset
        self.sampler = DistributedSampler(len(dataset[0]), world, rank, seed=rank_zero_seed)
        key = jax.random.PRNGKey(rank_zero_seed % MAX_SEED)
        params = {"w": 0.1 * jax.random.normal(key, (dataset[0].shape[1],)), "b": jnp.zeros(())}
        self.state = State(rank_zero_seed, params)
        self.max_epochs, self.batch_size, self.lr = max_epochs, batch_size, lr
        self._grad = jax.jit(jax.grad(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)))

    def _all_reduce_mean(self, grads):
        return {k: np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(0) for k, v in grads.items()}

    def fit(self):
        x_all, y_all = self.dataset
        for epoch in range(self.max_epochs):
            self.sampler.set_epoch(epoch)
            indices = list(self.sampler)
            for start in range(0, len(indices), self.batch_size):
                idx = indices[start:start + self.batch_size]
                self.state.seen.extend(idx)
                grads = self._all_reduce_mean(self._grad(self.state.params, x_all[idx], y_all[idx]))
                self.state.params = {k: self.state.params[k] - self.lr * grads[k] for k in grads}


def build_dataset(n=64, features=5):
    rng = np.random.default_rng(2024)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = (x @ np.linspace(-1.0, 1.0, features) + 0.3).astype(np.float32)
    return x, y


def main():
    logging.basicConfig(level=logging.INFO)
    trainer = Trainer(build_dataset())
    trainer.fit()
    seen = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.state.seen[:32], dtype=np.int32)))
    print("RESULT samples_covered_epoch0", len(set(seen.reshape(-1).tolist())))
    print("RESULT weights", np.round(np.asarray(trainer.state.params["w"]), 4).tolist())
    print("RESULT bias", round(float(trainer.state.params["b"]), 4))


if __name__ == "__main__":
    main()
