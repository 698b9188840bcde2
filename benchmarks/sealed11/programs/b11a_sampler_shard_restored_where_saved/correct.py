# Resume restores a checkpointed sampler shard only when every rank has one, otherwise all ranks re-split
# Source: https://github.com/bghira/SimpleTuner/pull/2986
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_sampler_shard_restored_where_saved",
                       os.environ.get("JOB_ID", "local"))
DATASET_SIZE, MICRO_BATCH = 24, 2


class BucketSampler:
    """Splits the shuffled dataset into one shard per data-parallel rank and walks it in micro-batches."""

    def __init__(self, seed, rank, world):
        order = np.random.default_rng(seed).permutation(DATASET_SIZE)
        self.shard = order[rank::world].tolist()
        self.cursor = 0

    def state_dict(self):
        return {"shard": self.shard, "cursor": self.cursor}

    def load_state_dict(self, state):
        self.shard, self.cursor = state["shard"], state["cursor"]

    def __iter__(self):
        while self.cursor + MICRO_BATCH <= len(self.shard):
            idx = self.shard[self.cursor:self.cursor + MICRO_BATCH]
            self.cursor += MICRO_BATCH
            yield np.stack([np.full((4,), i / DATASET_SIZE, np.float32) for i in idx])


class Trainer:
    def __init__(self, launch_seed):
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.batch_sharding = NamedSharding(self.mesh, P("data"))
        self.params = jax.device_put(np.ones((4,), np.float32), NamedSharding(self.mesh, P()))
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.sampler = BucketSampler(launch_seed, self.rank, self.world)
        self.global_step = 0
        self._step = jax.jit(lambda p, x: p - 0.1 * jnp.mean(x, axis=0) * p)

    def train_steps(self, max_steps=None):
        for batch in self.sampler:
            x = jax.make_array_from_process_local_data(self.batch_sharding, batch)
            self.params = self._step(self.params, x)
            self.global_step += 1
            if max_steps is not None and self.global_step >= max_steps:
                break

    def checkpoint_state_save(self):
        if self.rank == 0:  # only the main process reaches the save hook under plain data parallelism
            os.makedirs(OUT_DIR, exist_ok=True)
            with open(os.path.join(OUT_DIR, "trainer_state.json"), "w") as f:
                json.dump({"global_step": self.global_step}, f)
            with open(os.path.join(OUT_DIR, f"training_state-rank{self.rank}.json"), "w") as f:
                json.dump(self.sampler.state_dict(), f)
        multihost_utils.sync_global_devices("checkpoint written")

    def load_states(self):
        with open(os.path.join(OUT_DIR, "trainer_state.json")) as f:
            self.global_step = json.load(f)["global_step"]
        path = os.path.join(OUT_DIR, f"training_state-rank{self.rank}.json")
        state = {}
        if os.path.exists(path):
            with open(path) as f:
                state = json.load(f)
        every_rank_has_state = multihost_utils.process_allgather(np.array([int(bool(state))], np.int32))
        if np.min(every_rank_has_state) == 1:
            self.sampler.load_state_dict(state)
        else:
            self.sampler.cursor = MICRO_BATCH * self.global_step  # re-split, skip what the run already consumed


def main():
    first = Trainer(launch_seed=7)
    first.train_steps(max_steps=3)
    first.checkpoint_state_save()

    resumed = Trainer(launch_seed=8)  # --seed unset: every launch shuffles with a new seed
    resumed.load_states()
    resumed.train_steps()
    print("RESULT global_step", resumed.global_step)
    print("RESULT params", [round(float(v), 5) for v in np.asarray(resumed.params.addressable_data(0))])


main()
