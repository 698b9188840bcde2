# assert_equal all-gathers, so every process raises together and takes the same fallback collective
# Source: https://github.com/jax-ml/jax/commit/d7f5ee2d159d9a7603efa64f6b055850b2776b02
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import logging
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def assert_equal(in_tree, fail_message: str = ""):
    """Verifies that all the hosts have the same tree of values (multihost_utils.assert_equal after the fix)."""
    expected = multihost_utils.process_allgather(in_tree)
    if not jax.tree_util.tree_all(
            jax.tree_util.tree_map(lambda x, e: np.all(np.equal(x, e)), in_tree, expected)):
        raise AssertionError(f"{fail_message} Expected: {expected}; got: {in_tree}.")


@dataclass
class DataConfig:
    num_files: int = 7
    examples_per_file: int = 40
    per_host_batch: int = 4


class ShardedSource:
    def __init__(self, config: DataConfig):
        self.config = config
        self.files = list(range(jax.process_index(), config.num_files, jax.process_count()))

    def __len__(self):
        return len(self.files) * self.config.examples_per_file

    def batch(self, step: int) -> np.ndarray:
        base = self.files[0] * 1000 + step * self.config.per_host_batch
        return np.arange(base, base + self.config.per_host_batch, dtype=np.float32).reshape(-1, 1)


def steps_per_epoch(source: ShardedSource) -> int:
    local_steps = np.int32(len(source) // source.config.per_host_batch)
    try:
        assert_equal(local_steps, "hosts see a different number of steps per epoch")
        return int(local_steps)
    except AssertionError as e:
        logging.warning("%s; falling back to the minimum over hosts", e)
        return int(np.min(multihost_utils.process_allgather(local_steps)))


@jax.jit
def train_step(w, batch):
    return w + jnp.mean(batch) * 1e-3


def main():
    source = ShardedSource(DataConfig())
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    n_steps = steps_per_epoch(source)
    w = jnp.zeros(())
    for step in range(n_steps):
        w = train_step(w, jax.make_array_from_process_local_data(sharding, source.batch(step)))
    print("RESULT steps", n_steps)
    print("RESULT w", round(float(w), 4))


main()
