# Tensor-parallel serving with a per-rank KV-cache offload store: every rank looks up its own store
# and the scheduler uses the smallest hit count over all ranks (the fix, lookup across TP ranks)
# Source: https://github.com/LMCache/LMCache/issues/1467
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import hashlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHUNK, HEAD_DIM, N_KV_HEADS, VOCAB, D = 4, 4, 3, 32, 8
CPU_BUFFER_BYTES = 640


def local_heads(rank, world):
    return [h for h in range(N_KV_HEADS) if h * world // N_KV_HEADS == rank]


class LocalCPUBackend:
    """LRU store of this rank's KV chunks; it evicts on its own, unaware of the other ranks."""

    def __init__(self, max_bytes):
        self.max_bytes, self.used, self.data = max_bytes, 0, collections.OrderedDict()

    def put(self, key, kv):
        while self.data and self.used + kv.nbytes > self.max_bytes:
            _, old = self.data.popitem(last=False)
            self.used -= old.nbytes
        self.data[key] = kv
        self.used += kv.nbytes

    def contains(self, key):
        return key in self.data

    def get(self, key):
        self.data.move_to_end(key)
        return self.data[key]


def chunk_keys(tokens):
    keys, prefix = [], b"none"
    for i in range(0, len(tokens) - len(tokens) % CHUNK, CHUNK):
        prefix = hashlib.sha256(prefix + np.asarray(tokens[i:i + CHUNK], np.int32).tobytes()).digest()
        keys.append(prefix.hex()[:16])
    return keys


class TPWorker:
    def __init__(self):
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.heads = local_heads(self.rank, self.world)
        self.backend = LocalCPUBackend(CPU_BUFFER_BYTES)
        mesh = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
        self.partials = NamedSharding(mesh, P("tp"))
        self._allreduce = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(mesh, P()))
        table = np.sin(np.arange(VOCAB * D, dtype=np.float32)).reshape(VOCAB, D)
        self.emb = table
        self.w_kv = {h: np.cos(np.arange(D * HEAD_DIM, dtype=np.float32) + h).reshape(D, HEAD_DIM) for h in self.heads}

    def lookup(self, tokens) -> int:
        keys = chunk_keys(tokens[:len(tokens) - 1])  # the last token is always recomputed
        hit = 0
        while hit < len(keys) and self.backend.contains(keys[hit]):
            hit += 1
        return hit * CHUNK

    def prefill(self, tokens, num_hit):
        ctx = sum(float(self.backend.get(k).sum()) for k in chunk_keys(tokens[:num_hit]))
        new = tokens[num_hit:]
        x = self.emb[np.asarray(new)]
        kv = np.stack([x @ self.w_kv[h] for h in self.heads], axis=1)  # (T, heads, HEAD_DIM)
        for j, key in enumerate(chunk_keys(tokens)):
            if j * CHUNK >= num_hit and (j + 1) * CHUNK <= len(tokens):
                self.backend.put(key, np.stack([kv[j * CHUNK - num_hit:(j + 1) * CHUNK - num_hit]] * 2))
        partial = (kv.sum(axis=(1, 2))[:, None] * 0.01 + ctx * 1e-3) * np.ones((1, D), np.float32)
        out = self._allreduce(jax.make_array_from_process_local_data(self.partials, partial[None].astype(np.float32)))
        return np.asarray(out)[-1]


class Scheduler:
    def __init__(self, worker: TPWorker):
        self.worker = worker

    def get_num_new_matched_tokens(self, tokens) -> int:
        results = multihost_utils.process_allgather(np.int32(self.worker.lookup(tokens)))
        return int(np.min(results))

    def serve(self, tokens):
        num_hit = self.get_num_new_matched_tokens(tokens)
        return self.worker.prefill(tokens, num_hit)


if __name__ == "__main__":
    sched = Scheduler(TPWorker())
    prompt_a = [5, 9, 2, 7, 11, 3, 3, 8, 1]
    prompt_b = [6, 6, 4, 12, 10, 2, 9, 9, 14]
    for name, prompt in (("a", prompt_a), ("b", prompt_b), ("a_again", prompt_a)):
        out = sched.serve(prompt)
        print("RESULT", name, round(float(out.sum()), 4))
