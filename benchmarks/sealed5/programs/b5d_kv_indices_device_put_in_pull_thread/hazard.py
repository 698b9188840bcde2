# Disaggregated decode: the block indices of a KV pull are placed on the global mesh from inside the pull thread
# Source: https://github.com/vllm-project/tpu-inference/pull/1901
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import concurrent.futures
import dataclasses
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("kv",))
KV_SHARDING = NamedSharding(MESH, P("kv"))
REPLICATED = NamedSharding(MESH, P())


@dataclasses.dataclass
class LoadMeta:
    local_block_ids: list[int]
    remote_block_ids: list[int] | None


def device_array(x: np.ndarray) -> jax.Array:
    return jax.device_put(x, REPLICATED)


@jax.jit
def scatter_kv_slices(kv_caches, kv, indices):
    new = kv_caches.at[indices].set(kv)
    return new, jnp.sum(new)


@jax.jit
def decode_step(kv_caches, q):
    scores = jnp.einsum("bsd,d->bs", kv_caches, q)
    return jnp.sum(jax.nn.softmax(scores, axis=-1)[..., None] * kv_caches, axis=(0, 1))


class KVConnectorWorker:
    def __init__(self, kv_caches: jax.Array):
        self.kv_caches = kv_caches
        self.pull_executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.reqs_pulling: dict[str, concurrent.futures.Future] = {}
        self.reqs_ready_to_scatter: dict[str, tuple[jax.Array, jax.Array]] = {}
        self.checksums: list[float] = []

    def _pull_kv(self, req_id: str, meta: LoadMeta) -> tuple[jax.Array, jax.Array]:
        # Connection setup with the prefill server: duration depends on this host's network path.
        time.sleep(0.02 if jax.process_index() == 0 else 0.5)
        # TODO: pad block_ids to avoid recompilation
        indices = device_array(np.asarray(meta.local_block_ids, np.int32))
        kv = np.stack([np.full((4, 4), float(b + 1), np.float32) for b in meta.remote_block_ids])
        return device_array(kv), indices

    def process_load(self, reqs_to_load: dict[str, LoadMeta]) -> None:
        for req_id, meta in reqs_to_load.items():
            if meta.remote_block_ids is not None:
                self.reqs_pulling[req_id] = self.pull_executor.submit(self._pull_kv, req_id, meta)
            elif req_id in self.reqs_ready_to_scatter:
                # The scheduler says every worker has the KV: scatter now, in the same step on all hosts.
                kv, indices = self.reqs_ready_to_scatter.pop(req_id)
                self.kv_caches, checksum = scatter_kv_slices(self.kv_caches, kv, indices)
                self.checksums.append(float(checksum))

    def get_finished(self) -> set[str]:
        done_recving = set()
        for req_id in list(self.reqs_pulling):
            future = self.reqs_pulling[req_id]
            if future.done():
                self.reqs_ready_to_scatter[req_id] = future.result()
                del self.reqs_pulling[req_id]
                done_recving.add(req_id)
        return done_recving


class Scheduler:
    """Same decisions on every host; finished sets are aggregated across workers."""

    def __init__(self):
        self.waiting_remote = {"req-0": LoadMeta([1, 2], [5, 6]), "req-1": LoadMeta([4, 7], [0, 3])}
        self.loaded: set[str] = set()

    def schedule(self, step: int) -> dict[str, LoadMeta]:
        if step == 2:  # the prefill server hands these requests over
            return dict(self.waiting_remote)
        out = {r: LoadMeta(m.local_block_ids, None) for r, m in self.waiting_remote.items() if r in self.loaded}
        for r in out:
            del self.waiting_remote[r]
        return out

    def update_from_output(self, finished_per_worker: np.ndarray, req_ids: list[str]) -> None:
        for i, r in enumerate(req_ids):
            if finished_per_worker[:, i].all():
                self.loaded.add(r)


def main() -> None:
    kv = jax.device_put(jnp.zeros((8, 4, 4), jnp.float32), KV_SHARDING)
    worker, scheduler = KVConnectorWorker(kv), Scheduler()
    req_ids = ["req-0", "req-1"]
    finished: set[str] = set()
    outs = []
    for step in range(12):
        worker.process_load(scheduler.schedule(step))
        out = decode_step(worker.kv_caches, jax.device_put(jnp.ones((4,)) * (step + 1), REPLICATED))
        outs.append(round(float(jnp.sum(out)), 3))
        finished |= worker.get_finished()
        flags = np.array([r in finished for r in req_ids], np.int32)
        scheduler.update_from_output(np.asarray(multihost_utils.process_allgather(flags)), req_ids)
        time.sleep(0.1)
    print("RESULT loaded", sorted(scheduler.loaded))
    print("RESULT decode", outs)
    print("RESULT checksums", worker.checksums)


if __name__ == "__main__":
    main()
