# Each tensor-parallel process estimates its KV-cache block pool, then all take the minimum across processes
# Source: https://github.com/GeeeekExplorer/nano-vllm/pull/215
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TOTAL_MEMORY = 65536


@dataclass
class Config:
    block_size: int = 4
    num_kv_heads: int = 2
    head_dim: int = 4
    gpu_memory_utilization: float = 0.9
    num_kvcache_blocks: int = -1


class ModelRunner:
    def __init__(self, config: Config, mesh):
        self.config, self.mesh = config, mesh
        self.rank, self.world_size = jax.process_index(), jax.process_count()
        self.head_sharding = NamedSharding(mesh, P(None, None, "tp", None))
        self._store = jax.jit(lambda cache, block, offset, kv: cache.at[block, offset].set(kv))
        self._attend = jax.jit(lambda cache, q: jnp.einsum("nbhd,hd->h", cache, q),
                               out_shardings=NamedSharding(mesh, P()))
        self.allocate_kv_cache()

    def mem_get_info(self):
        used = 20000 + (6144 if self.rank == 0 else 0)  # rank 0 also holds the scheduler's buffers
        return TOTAL_MEMORY - used, TOTAL_MEMORY

    def allocate_kv_cache(self):
        cfg = self.config
        free, total = self.mem_get_info()
        local_heads = cfg.num_kv_heads // self.world_size
        block_bytes = 2 * cfg.block_size * local_heads * cfg.head_dim * 4
        budget = total * cfg.gpu_memory_utilization - (total - free)
        local_blocks = np.int32(int(budget) // block_bytes)
        cfg.num_kvcache_blocks = int(np.min(multihost_utils.process_allgather(local_blocks)))
        local = np.zeros((cfg.num_kvcache_blocks, cfg.block_size, local_heads, cfg.head_dim), np.float32)
        self.kv_cache = jax.make_array_from_process_local_data(self.head_sharding, local)

    def schedule(self, requests):
        """SPMD scheduling: every process runs the same scheduler over its own block pool."""
        pool = self.config.num_kvcache_blocks
        batches, batch, free = [], [], list(range(pool))
        for seq_id, need in requests:
            if need > len(free):  # pool exhausted: this sequence waits for the next batch
                batches.append(batch)
                batch, free = [], list(range(pool))
            batch.append((seq_id, free[:need]))
            free = free[need:]
        return batches + [batch]

    def run_batch(self, batch):
        cfg = self.config
        for seq_id, blocks in batch:
            kv = np.full((cfg.num_kv_heads, cfg.head_dim), 0.1 * (seq_id + 1), np.float32)
            kv = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("tp", None)),
                                                        np.split(kv, self.world_size)[self.rank])
            self.kv_cache = self._store(self.kv_cache, blocks[0], 0, kv)
        q = jax.device_put(np.ones((cfg.num_kv_heads, cfg.head_dim), np.float32),
                           NamedSharding(self.mesh, P("tp", None)))
        return np.asarray(self._attend(self.kv_cache, q).addressable_data(0))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
    runner = ModelRunner(Config(), mesh)
    requests = [(seq_id, 100) for seq_id in range(6)]  # each prompt needs 100 blocks
    for i, batch in enumerate(runner.schedule(requests)):
        out = runner.run_batch(batch)
        print("RESULT batch", i, [s for s, _ in batch], np.round(out, 4).tolist())


main()
