# Sharded LLM server warmup: each shard sizes its KV cache from its own free memory then the router takes the smallest answer and warms every shard up again with it
# Source: https://github.com/huggingface/text-generation-inference/pull/678
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
COLS = NamedSharding(MESH, P(None, "tp"))            # column-parallel projection, heads split across shards
HIDDEN, HEADS_PER_SHARD, BLOCK_SIZE, BYTES_PER_BLOCK = 4, 2, 16, 4096
TOTAL_BYTES, SIDECAR_BYTES = 160 * 1024, 64 * 1024
REQUESTS = 6


def device_free_bytes(rank):
    # shard 1's accelerator also hosts the router's tokenizer/embedding sidecar
    return TOTAL_BYTES - (SIDECAR_BYTES if rank == 1 else 0)


@jax.jit
def forward(w, x):
    return jnp.sum(jnp.tanh(x @ w), axis=-1)        # the row sum crosses the tp shards


class FlashShard:
    def __init__(self):
        self.rank = jax.process_index()
        w = np.random.default_rng(0).normal(size=(HIDDEN, HEADS_PER_SHARD * jax.process_count()))
        self.w = jax.device_put(w.astype(np.float32), COLS)
        self.cache, self.num_blocks = None, 0

    def allocate_cache(self, num_blocks):
        self.cache = np.zeros((num_blocks, HEADS_PER_SHARD), np.float32)   # this shard's KV blocks
        self.num_blocks = num_blocks

    def warmup(self, num_blocks=None):
        if num_blocks is None:
            num_blocks = device_free_bytes(self.rank) // BYTES_PER_BLOCK
        self.allocate_cache(num_blocks)
        forward(self.w, jnp.ones((8, HIDDEN), jnp.float32)).block_until_ready()   # max-prefill forward
        return num_blocks * BLOCK_SIZE                  # max supported total tokens

    def decode(self, slot, x):
        if slot >= self.num_blocks:                    # the block allocator of this shard
            raise MemoryError(f"shard {self.rank}: KV block {slot} not allocated ({self.num_blocks} blocks)")
        out = forward(self.w, x)
        self.cache[slot] += float(out[0])
        return out


class Router:
    def __init__(self, shard):
        self.shard = shard

    def warmup(self):
        supported = self.shard.warmup()
        responses = np.asarray(multihost_utils.process_allgather(np.int32(supported)))
        max_batch_total_tokens = int(responses.min())   # shards may differ: keep the smallest
        self.shard.warmup(max_batch_total_tokens // BLOCK_SIZE)   # second stage: same cache on every shard
        return max_batch_total_tokens

    def serve(self, max_batch_total_tokens):
        num_blocks = max_batch_total_tokens // BLOCK_SIZE
        for req in range(REQUESTS):
            slot = (req * 7) % num_blocks           # scheduler fills blocks up to the router's budget
            x = jnp.full((1, HIDDEN), 0.1 * (req + 1), jnp.float32)
            self.shard.decode(slot, x)
        local = np.float32(self.shard.cache.sum())
        return float(np.sum(multihost_utils.process_allgather(local)))


def main():
    router = Router(FlashShard())
    max_total = router.warmup()
    checksum = router.serve(max_total)
    multihost_utils.sync_global_devices("served")
    print("RESULT max_batch_total_tokens", max_total)
    print("RESULT cache_checksum", round(checksum, 3))


if __name__ == "__main__":
    main()
