# Sparse-embedding input preprocessing sized by per-host id statistics; the stats are synced but the inputs are not redone
# Source: https://github.com/keras-team/keras-rs/pull/146
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPLICATED = NamedSharding(MESH, P())


@dataclasses.dataclass
class InputStats:
    max_ids_per_sample: int
    max_unique_ids: int

    def merge(self, other: "InputStats") -> "InputStats":
        return InputStats(max(self.max_ids_per_sample, other.max_ids_per_sample),
                          max(self.max_unique_ids, other.max_unique_ids))


class DistributedEmbedding:
    def __init__(self, vocab_size: int, dim: int, initial_stats: InputStats):
        self.vocab_size = vocab_size
        self.table = jax.device_put(
            jnp.asarray(np.random.default_rng(0).normal(size=(vocab_size, dim)).astype(np.float32)), REPLICATED)
        self._stats = initial_stats

    def _compute_stats(self, ragged_ids: list[np.ndarray]) -> InputStats:
        return InputStats(max(len(r) for r in ragged_ids),
                          len(np.unique(np.concatenate(ragged_ids))))

    def _sync_stats(self, stats: InputStats) -> InputStats:
        local = np.array([stats.max_ids_per_sample, stats.max_unique_ids], np.int32)
        gathered = np.asarray(multihost_utils.process_allgather(local))
        return InputStats(int(gathered[:, 0].max()), int(gathered[:, 1].max()))

    def _pack(self, ragged_ids: list[np.ndarray], stats: InputStats) -> dict:
        ids = np.zeros((len(ragged_ids), stats.max_ids_per_sample), np.int32)
        weights = np.zeros_like(ids, dtype=np.float32)
        for i, r in enumerate(ragged_ids):
            ids[i, :len(r)] = r
            weights[i, :len(r)] = 1.0 / len(r)
        return {"ids": ids, "weights": weights}

    def preprocess(self, ragged_ids: list[np.ndarray], training: bool = True) -> dict:
        stats = self._stats.merge(self._compute_stats(ragged_ids))
        packed = self._pack(ragged_ids, stats)
        if training:
            # All hosts must use the same buffer sizes: agree on the largest.
            self._stats = self._sync_stats(stats)
        return {k: jax.make_array_from_process_local_data(BATCH, v) for k, v in packed.items()}


@jax.jit
def lookup_and_loss(table, ids, weights, labels):
    gathered = table[ids] * weights[..., None]
    emb = jnp.sum(gathered, axis=1)
    logits = jnp.sum(emb, axis=-1)
    slot_fill = jnp.mean((weights > 0).astype(jnp.float32), axis=0)  # per-slot occupancy over the global batch
    slot_norm = jnp.mean(jnp.abs(gathered), axis=(0, 2))
    return jnp.mean((logits - labels) ** 2), slot_fill, slot_norm


def host_batches(num_batches: int, rows: int, vocab: int):
    rng = np.random.default_rng(100 + jax.process_index())  # each host reads its own shard
    for _ in range(num_batches):
        lengths = rng.integers(1, 4 + 3 * jax.process_index(), size=rows)
        yield [rng.integers(0, vocab, size=n) for n in lengths], rng.normal(size=rows).astype(np.float32)


def main() -> None:
    layer = DistributedEmbedding(vocab_size=50, dim=4, initial_stats=InputStats(2, 8))
    losses, fills = [], []
    for ragged, labels in host_batches(num_batches=4, rows=4, vocab=50):
        inputs = layer.preprocess(ragged, training=True)
        y = jax.make_array_from_process_local_data(BATCH, labels)
        loss, slot_fill, slot_norm = lookup_and_loss(layer.table, inputs["ids"], inputs["weights"], y)
        losses.append(float(loss))
        fills.append(round(float(jnp.sum(slot_fill) + jnp.sum(slot_norm)), 4))
    print("RESULT stats", layer._stats.max_ids_per_sample, layer._stats.max_unique_ids)
    print("RESULT losses", [round(v, 4) for v in losses])
    print("RESULT slot_fill", fills)


if __name__ == "__main__":
    main()
