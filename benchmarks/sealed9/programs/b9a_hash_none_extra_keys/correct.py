# KV-cache chunk keys hash a canonical tuple (extra_keys None -> ()), the same in every worker
# Source: https://github.com/LMCache/LMCache-Ascend/issues/28
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class CacheConfig:
    chunk_size: int = 4
    hidden: int = 8


def hash_tokens(prefix_hash: int, tokens, extra_keys=None) -> int:
    extra = tuple(extra_keys) if extra_keys is not None else ()
    return hash((prefix_hash, tuple(tokens), extra)) & 0x7FFFFFFF


class LocalKVStore:
    """Each tensor-parallel worker keeps the KV chunks it computed, keyed by chunk hash."""

    def __init__(self):
        self.chunks = {}

    def put(self, key, kv):
        self.chunks[int(key)] = kv

    def num_hit_chunks(self, keys):
        n = 0
        for k in keys:
            if int(k) not in self.chunks:
                break
            n += 1
        return n


def chunk_keys(prompt_tokens, cfg, extra_keys=None):
    keys, prefix_hash = [], 0
    for i in range(0, len(prompt_tokens) - cfg.chunk_size + 1, cfg.chunk_size):
        prefix_hash = hash_tokens(prefix_hash, prompt_tokens[i:i + cfg.chunk_size], extra_keys)
        keys.append(prefix_hash)
    return keys


@jax.jit
def prefill(w, x):
    return jnp.tanh(x @ w).sum(axis=-1)


def run_request(store, prompt, w, mesh, cfg):
    # the scheduler (process 0) hashes the prompt and tells every worker which chunks to look up
    keys = multihost_utils.broadcast_one_to_all(np.asarray(chunk_keys(prompt, cfg), np.int32))
    hit = store.num_hit_chunks(keys)
    todo = prompt[hit * cfg.chunk_size:]
    x = np.eye(cfg.hidden, dtype=np.float32)[np.asarray(todo) % cfg.hidden][None]
    out = prefill(w, jax.make_array_from_process_local_data(NamedSharding(mesh, P("tp")), x))
    for k in chunk_keys(prompt, cfg):  # store the freshly computed chunks under this worker's keys
        store.put(k, None)
    return hit, len(todo), out


def main():
    cfg = CacheConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("tp",))
    w = jax.device_put(np.linspace(-1, 1, cfg.hidden * cfg.hidden, dtype=np.float32).reshape(cfg.hidden, -1),
                       NamedSharding(mesh, P()))
    store = LocalKVStore()
    prompt = list(range(3, 19))
    run_request(store, prompt, w, mesh, cfg)  # cold cache
    hit, computed, out = run_request(store, prompt + [21, 22], w, mesh, cfg)  # shares the 16-token prefix
    print("RESULT hit_chunks", hit)
    print("RESULT computed_tokens", computed)
    print("RESULT out_shape", tuple(out.shape))


main()
