# Embedding input statistics "aggregated across all processes" with a pmap over the local CPU devices only
# Source: https://github.com/keras-team/keras-rs/pull/164
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))


@dataclasses.dataclass
class StackedTableSpec:
    vocab: int
    dim: int
    max_ids_per_partition: int = 4
    max_unique_ids_per_partition: int = 4


class SparseCorePreprocessor:
    def __init__(self, specs: dict[str, StackedTableSpec]):
        self.specs = specs

    def _stats(self, features: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
        out = {}
        for name, rows in features.items():
            out[name] = np.array([max(len(r) for r in rows), len(np.unique(np.concatenate(rows)))], np.int32)
        return out

    def _aggregate(self, stats: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # Aggregate stats across all processes/devices via pmax.
        num_local_cpu_devices = jax.local_device_count("cpu")

        def pmax_aggregate(x: Any) -> Any:
            tiled_x = np.tile(x, (num_local_cpu_devices, *([1] * x.ndim)))
            return np.asarray(jax.pmap(lambda y: jax.lax.pmax(y, "all_cpus"), axis_name="all_cpus",
                                       devices=jax.local_devices(backend="cpu"))(tiled_x)[0])

        return jax.tree.map(pmax_aggregate, stats)

    def _pack(self, rows: list[np.ndarray], spec: StackedTableSpec) -> np.ndarray:
        ids = np.full((len(rows), spec.max_ids_per_partition), -1, np.int32)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r[:spec.max_ids_per_partition]
        return ids

    def __call__(self, features: dict[str, list[np.ndarray]]) -> dict[str, jax.Array]:
        full_stats = self._aggregate(self._stats(features))
        changed = any(int(full_stats[n][0]) > s.max_ids_per_partition or int(full_stats[n][1]) > s.max_unique_ids_per_partition
                      for n, s in self.specs.items())
        if changed:
            for n, s in self.specs.items():
                s.max_ids_per_partition = max(s.max_ids_per_partition, int(full_stats[n][0]))
                s.max_unique_ids_per_partition = max(s.max_unique_ids_per_partition, int(full_stats[n][1]))
        sharding = NamedSharding(MESH, P("data"))
        return {n: jax.make_array_from_process_local_data(sharding, self._pack(rows, self.specs[n]))
                for n, rows in features.items()}


@jax.jit
def pooled_lookup(tables, ids):
    out = {}
    for name, table in tables.items():
        valid = (ids[name] >= 0).astype(jnp.float32)
        emb = table[jnp.maximum(ids[name], 0)] * valid[..., None]
        out[name] = jnp.sum(emb, axis=1) / jnp.maximum(jnp.sum(valid, axis=1, keepdims=True), 1.0)
    fill = {n: jnp.mean(ids[n] >= 0, axis=0) for n in ids}  # per-slot fill rate over the global batch
    return jnp.sum(jnp.concatenate([v for v in out.values()], axis=-1)), fill


def read_local_batch(step: int) -> dict[str, list[np.ndarray]]:
    rng = np.random.default_rng(1000 * jax.process_index() + step)  # this host's shard of the stream
    longest = 3 + 2 * jax.process_index()
    return {"user": [rng.integers(0, 20, size=rng.integers(1, longest + 1)) for _ in range(4)],
            "item": [rng.integers(0, 30, size=rng.integers(1, 3)) for _ in range(4)]}


def main() -> None:
    specs = {"user": StackedTableSpec(vocab=20, dim=4), "item": StackedTableSpec(vocab=30, dim=4)}
    rng = np.random.default_rng(0)
    tables = {n: jax.device_put(jnp.asarray(rng.normal(size=(s.vocab, s.dim)).astype(np.float32)),
                                NamedSharding(MESH, P())) for n, s in specs.items()}
    pre = SparseCorePreprocessor(specs)
    totals, fills = [], []
    for step in range(3):
        ids = pre(read_local_batch(step))
        total, fill = pooled_lookup(tables, ids)
        totals.append(round(float(total), 4))
        fills.append(round(float(sum(jnp.sum(v) for v in fill.values())), 4))
    print("RESULT specs", {n: (s.max_ids_per_partition, s.max_unique_ids_per_partition) for n, s in specs.items()})
    print("RESULT totals", totals)
    print("RESULT fills", fills)


if __name__ == "__main__":
    main()
