# Checkpoint save with node-local storage: the first process of each node creates the save dir its node writes into
# Source: https://github.com/deepspeedai/DeepSpeed/pull/4536
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EngineConfig:
    use_node_local_storage: bool = True
    procs_per_node: int = 1       # one process per node in this job
    rows: int = 8
    cols: int = 3
    steps: int = 3


MESH = Mesh(np.array(jax.devices()), ("dp",))
SHARDED = NamedSharding(MESH, P("dp"))


def node_root(cfg):
    """Node-local disk: each node sees only its own directory tree."""
    job = os.environ.get("JOB_ID", "job")
    node = jax.process_index() // cfg.procs_per_node
    return os.path.join(tempfile.gettempdir(), "mcjax_sealed10_node_local_ckpt", job, f"node{node}")


class Engine:
    def __init__(self, cfg):
        self.cfg = cfg
        self.global_rank = jax.process_index()
        self.local_rank = jax.process_index() % cfg.procs_per_node
        full = np.arange(cfg.rows * cfg.cols, dtype=np.float32).reshape(cfg.rows, cfg.cols) / 10.0
        self.state = jax.device_put(full, SHARDED)   # ZeRO-style partitioned state
        self._step = jax.jit(lambda s: s * 0.9 + jnp.mean(s))  # mean over all partitions: cross-process

    def train_step(self):
        self.state = self._step(self.state)

    def save_checkpoint(self, tag):
        save_dir = os.path.join(node_root(self.cfg), tag)
        # Ensure save_dir directory exists (on node-local storage, once per node)
        rank = self.local_rank if self.cfg.use_node_local_storage else self.global_rank
        if rank == 0:
            os.makedirs(save_dir, exist_ok=True)
        multihost_utils.sync_global_devices(f"mkdir_{tag}")
        for shard in self.state.addressable_shards:
            start = shard.index[0].start or 0
            np.save(os.path.join(save_dir, f"zero_pp_rank_{self.global_rank}_rows{start}.npy"),
                    np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"saved_{tag}")
        return save_dir

    def load_checkpoint(self, save_dir):
        local = []
        for shard in self.state.addressable_shards:
            start = shard.index[0].start or 0
            local.append(np.load(os.path.join(save_dir, f"zero_pp_rank_{self.global_rank}_rows{start}.npy")))
        self.state = multihost_utils.host_local_array_to_global_array(np.concatenate(local), MESH, P("dp"))


def main():
    cfg = EngineConfig()
    engine = Engine(cfg)
    for _ in range(cfg.steps):
        engine.train_step()
    save_dir = engine.save_checkpoint("global_step3")
    engine.load_checkpoint(save_dir)
    engine.train_step()
    full = np.asarray(multihost_utils.process_allgather(engine.state, tiled=True))
    print("RESULT state_sum", f"{full.sum():.4f}")
    print("RESULT first_row", np.round(full[0], 4).tolist())


if __name__ == "__main__":
    main()
