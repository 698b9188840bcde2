# The dataset-iterator checkpoint handler is registered on every host and only skips the write where
# it should not write; the handler itself has no barrier (the manager's finalize barrier covers it).
# Source: https://github.com/google-research/t5x/commit/dddbfca56bd9c7a4cdbc7d4b9b9b4802c45ab164
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("model",))
REPL = NamedSharding(MESH, P())
SHARDED = NamedSharding(MESH, P("model"))


@dataclass
class DataLayout:
    batch_size: int
    shard_id: int
    num_shards: int
    is_first_host_in_replica_set: bool


def get_data_layout():
    # Both processes hold one model replica (the mesh is all model-parallel): one data shard.
    return DataLayout(batch_size=4, shard_id=0, num_shards=1,
                      is_first_host_in_replica_set=jax.process_index() == 0)


class DatasetIterator:
    def __init__(self, seed):
        self.position, self.seed = 0, seed

    def __next__(self):
        rng = np.random.default_rng(self.seed + self.position)
        self.position += 1
        return rng.normal(size=(4, 4)).astype(np.float32)

    def save(self, filename):
        with open(filename, "w") as f:
            json.dump({"position": self.position}, f)


class StateHandler:
    def save(self, directory, train_state):
        local = np.asarray(train_state["w"].addressable_data(0))
        np.save(os.path.join(directory, f"w.{jax.process_index()}.npy"), local)


class DatasetCheckpointHandler:
    def __init__(self, checkpoint_filename, should_write_dataset_ckpt):
        self._checkpoint_filename = checkpoint_filename
        self._should_write_dataset_ckpt = should_write_dataset_ckpt

    def save(self, directory, item):
        if self._should_write_dataset_ckpt:
            if item is None:
                raise ValueError("Must provide item to save.")
            directory = os.path.join(directory, f"process_{jax.process_index()}-of-{jax.process_count()}")
            os.makedirs(directory, exist_ok=True)
            item.save(os.path.join(directory, self._checkpoint_filename))


class OrbaxCheckpointManagerInterface:
    def __init__(self, directory, data_layout, dataset_iterator):
        self._directory = directory
        self._dataset_iterator = dataset_iterator
        dataset_ckpt_name = f"train_ds-{data_layout.shard_id:03}-of-{data_layout.num_shards:03}"
        self._should_write_dataset_ckpt = bool(dataset_iterator) and data_layout.is_first_host_in_replica_set
        self._item_handlers = {
            "state": StateHandler(),
            "dataset": DatasetCheckpointHandler(dataset_ckpt_name, self._should_write_dataset_ckpt),
        }

    def save(self, train_state, step):
        step_dir = os.path.join(self._directory, f"checkpoint_{step}")
        os.makedirs(step_dir, exist_ok=True)
        args = {"state": train_state, "dataset": self._dataset_iterator}
        for key, handler in self._item_handlers.items():
            handler.save(step_dir, args[key])
        multihost_utils.sync_global_devices(f"CheckpointManager:finalize:{step}")


@jax.jit
def train_step(state, batch):
    grads = jax.grad(lambda w: jnp.sum(jnp.tanh(batch @ w)))(state["w"])
    return {"w": state["w"] - 0.01 * grads}


def train(num_steps=4, period=2):
    layout = get_data_layout()
    ds = DatasetIterator(seed=layout.shard_id)
    workdir = os.path.join(tempfile.gettempdir(), f"b5a_t5x_{os.environ.get('JOB_ID', 'local')}")
    manager = OrbaxCheckpointManagerInterface(workdir, layout, ds)
    state = {"w": jax.device_put(jnp.ones((4, 2 * jax.process_count())), SHARDED)}
    for step in range(1, num_steps + 1):
        batch = jax.device_put(next(ds), REPL)
        state = train_step(state, batch)
        if step % period == 0:
            manager.save(state, step)
    return multihost_utils.process_allgather(state["w"], tiled=True)


w = train()
print("RESULT", round(float(np.sum(w)), 5))
