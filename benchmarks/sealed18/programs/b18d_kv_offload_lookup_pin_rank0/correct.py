# KV-cache offloading connector for tensor-parallel serving: every rank looks up (and pins) its own chunks, the minimum hit is used
# Source: https://github.com/LMCache/LMCache/pull/1101
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHUNK_SIZE = 16
MAX_LOCAL_CHUNKS = 8
HIDDEN, KV_DIM = 32, 16


class LocalCPUBackend:
    def __init__(self, max_chunks):
        self.max_chunks = max_chunks
        self.chunks = OrderedDict()
        self.pinned = set()

    def put(self, key, kv):
        while len(self.chunks) >= self.max_chunks:
            victim = next((k for k in self.chunks if k not in self.pinned), None)
            if victim is None:
                return
            del self.chunks[victim]
        self.chunks[key] = kv

    def get(self, key):
        self.chunks.move_to_end(key)
        return self.chunks[key]


class LMCacheEngine:
    def __init__(self, worker_id):
        self.worker_id = worker_id
        self.backend = LocalCPUBackend(MAX_LOCAL_CHUNKS)

    def _keys(self, tokens):
        return [(self.worker_id, hash(tuple(tokens[:end]))) for end in range(CHUNK_SIZE, len(tokens) + 1, CHUNK_SIZE)]

    def lookup(self, tokens, pin=False):
        hit = 0
        for key in self._keys(tokens):
            if key not in self.backend.chunks:
                break
            if pin:
                self.backend.pinned.add(key)
            hit += CHUNK_SIZE
        return hit

    def store(self, tokens, kv):
        for i, key in enumerate(self._keys(tokens)):
            self.backend.put(key, kv[i * CHUNK_SIZE:(i + 1) * CHUNK_SIZE])

    def retrieve(self, tokens, num_tokens):
        out = []
        for key in self._keys(tokens[:num_tokens]):
            if key not in self.backend.chunks:
                break
            out.append(self.backend.get(key))
        return np.concatenate(out) if out else np.zeros((0, KV_DIM // jax.process_count()), np.float32)


class TPModelRunner:
    def __init__(self):
        self.mesh = Mesh(np.array(jax.devices()), ("tp",))
        self.col = NamedSharding(self.mesh, P(None, "tp"))
        self.rep = NamedSharding(self.mesh, P())
        self.embed = np.random.default_rng(0).standard_normal((512, HIDDEN)).astype(np.float32) * 0.1
        w_kv = np.random.default_rng(1).standard_normal((HIDDEN, KV_DIM)).astype(np.float32) * 0.1
        self.w_kv = jax.make_array_from_callback(w_kv.shape, self.col, lambda idx: w_kv[idx])
        self._prefill = jax.jit(lambda h, w: h @ w, out_shardings=self.col)
        self._decode = jax.jit(lambda q, kv: jax.nn.softmax(kv @ q[:KV_DIM]) @ kv, out_shardings=self.rep)

    def prefill_kv(self, tokens):
        h = jax.make_array_from_process_local_data(self.rep, self.embed[np.asarray(tokens)])
        return np.asarray(self._prefill(h, self.w_kv).addressable_shards[0].data)

    def decode(self, local_kv, last_token):
        kv = jax.make_array_from_process_local_data(self.col, local_kv)
        q = jax.make_array_from_process_local_data(self.rep, self.embed[last_token])
        return np.asarray(self._decode(q, kv).addressable_shards[0].data)


def get_num_new_matched_tokens(engine, tokens):
    hit = engine.lookup(tokens, pin=True)
    return int(np.asarray(multihost_utils.process_allgather(np.array([hit], np.int32))).min())


def main():
    runner = TPModelRunner()
    engine = LMCacheEngine(worker_id=jax.process_index())
    system_prompt = list(range(100, 164))
    for prompt in (system_prompt, list(range(300, 348))):
        engine.store(prompt, runner.prefill_kv(prompt))

    request = system_prompt + list(range(200, 220))
    num_external_hit = get_num_new_matched_tokens(engine, request)
    finished = list(range(400, 448))
    engine.store(finished, runner.prefill_kv(finished))
    retrieved = engine.retrieve(request, num_external_hit)
    new_kv = runner.prefill_kv(request[num_external_hit:])
    out = runner.decode(np.concatenate([retrieved, new_kv]), request[-1])
    print("RESULT external_hit_tokens", num_external_hit)
    print("RESULT retrieved_tokens", retrieved.shape[0])
    print("RESULT decode_out", np.round(out, 4).tolist())


if __name__ == "__main__":
    main()
