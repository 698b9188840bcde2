# Tensor-parallel offline inference engine: every process profiles its own memory and sizes the paged KV cache from it
# Source: https://github.com/vllm-project/vllm/pull/12071
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
import resource
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class CacheConfig:
    block_size: int = 4
    num_kv_heads: int = 2
    head_dim: int = 8
    num_layers: int = 4
    memory_budget_bytes: int = 512 << 20
    gpu_memory_utilization: float = 0.9


class Worker:
    def __init__(self, cache_config, mesh):
        self.cache_config = cache_config
        self.mesh = mesh
        self.params = {"wq": jnp.ones((64, 64), jnp.float32), "wo": jnp.ones((64, 64), jnp.float32)}

    def cache_block_size_bytes(self):
        c = self.cache_config
        return 2 * c.num_layers * c.block_size * c.num_kv_heads * c.head_dim * 4

    def profile_run(self):
        """Run a dummy forward pass at max batch size and return the peak memory of this process."""
        x = jnp.ones((256, 64), jnp.float32)
        y = jax.jit(lambda p, a: jnp.tanh(a @ p["wq"]) @ p["wo"])(self.params, x)
        y.block_until_ready()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def determine_num_available_blocks(self):
        c = self.cache_config
        peak = self.profile_run()
        available = int(c.memory_budget_bytes * c.gpu_memory_utilization) - peak
        return max(available // self.cache_block_size_bytes(), 0)


class Executor:
    """Executor for an externally launched (torchrun-style) job: this process owns exactly one worker."""

    def __init__(self, cache_config):
        self.mesh = Mesh(np.array(jax.devices()), ("tp",))
        self.worker = Worker(cache_config, self.mesh)

    def determine_num_available_blocks(self):
        return self.worker.determine_num_available_blocks()

    def initialize_cache(self, num_gpu_blocks):
        c = self.worker.cache_config
        local = np.zeros((num_gpu_blocks, c.block_size, c.num_kv_heads * c.head_dim), np.float32)
        sharding = NamedSharding(self.mesh, P(None, None, "tp"))
        self.kv_cache = jax.make_array_from_process_local_data(sharding, local)
        return self.kv_cache.shape


def main():
    executor = Executor(CacheConfig())
    num_gpu_blocks = executor.determine_num_available_blocks()
    cache_shape = executor.initialize_cache(num_gpu_blocks)
    occupancy = jax.jit(lambda kv: jnp.sum(kv + 1.0), out_shardings=NamedSharding(executor.mesh, P()))(executor.kv_cache)
    print("RESULT num_gpu_blocks", num_gpu_blocks)
    print("RESULT kv_cache_shape", tuple(cache_shape))
    print("RESULT occupancy", float(occupancy.addressable_shards[0].data))


if __name__ == "__main__":
    main()
