# Trainer config draws a random run id per process; the checkpoint path derived from it differs per host
# Source: https://github.com/stanford-crfm/levanter/pull/341
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os
import tempfile
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P


@dataclasses.dataclass
class TrainerConfig:
    id: Optional[str] = None
    seed: int = 0
    num_train_steps: int = 6
    steps_per_save: int = 3
    base_path: str = os.path.join(tempfile.gettempdir(), "b4a_run_id_ckpts")

    def __post_init__(self):
        if self.id is None:
            # wandb run ids are 8 characters [a-z0-9], which we'll emulate here
            self.id = "".join(np.random.choice(list("abcdefghijklmnopqrstuvwxyz0123456789"), size=8))

    def initialize(self):
        """Initializes jax and the run directory."""
        jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                                   int(os.environ["PROCESS_ID"]))
        os.makedirs(self.checkpoint_path, exist_ok=True)

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.base_path, self.id)


def save_checkpoint(params, step: int, checkpoint_path: str) -> str:
    step_dir = os.path.join(checkpoint_path, f"step-{step}")
    os.makedirs(step_dir, exist_ok=True)
    for shard in params.addressable_shards:
        np.save(os.path.join(step_dir, f"shard_{jax.process_index()}.npy"), np.asarray(shard.data))
    # make sure that all processes agree on the checkpoint path and also synchronize hosts
    multihost_utils.sync_global_devices(step_dir)
    return step_dir


class Trainer:
    def __init__(self, config: TrainerConfig):
        self.config = config
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.sharding = NamedSharding(self.mesh, P("data"))
        self.saved = []

    def init_params(self):
        key = jax.random.PRNGKey(self.config.seed)
        full = np.asarray(jax.random.normal(key, (jax.device_count() * 4,)))
        return jax.make_array_from_callback(full.shape, self.sharding, lambda idx: full[idx])

    def train(self):
        params = self.init_params()
        step_fn = jax.jit(lambda p: p - 0.1 * jnp.tanh(p), out_shardings=self.sharding)
        for step in range(1, self.config.num_train_steps + 1):
            params = step_fn(params)
            if step % self.config.steps_per_save == 0:
                self.saved.append(save_checkpoint(params, step, self.config.checkpoint_path))
        return params


config = TrainerConfig()
config.initialize()
trainer = Trainer(config)
final = trainer.train()
total = multihost_utils.process_allgather(final, tiled=True)
print("RESULT checkpoints", [os.path.basename(p) for p in trainer.saved])
print("RESULT run", config.id, round(float(np.sum(total)), 5))
