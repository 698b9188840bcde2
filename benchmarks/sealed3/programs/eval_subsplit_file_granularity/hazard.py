# Distributed validation gives each host a sub-split of the eval set cut at file (shard) boundaries
# Source: https://github.com/tensorflow/datasets/issues/3119
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CLASSES = 5
FEATURES = 6


@dataclasses.dataclass(frozen=True)
class SplitInfo:
    name: str
    shard_lengths: tuple[int, ...]

    @property
    def num_examples(self) -> int:
        return sum(self.shard_lengths)


VALIDATION = SplitInfo("validation", shard_lengths=(4, 4, 4, 4, 4, 4, 4))


def even_splits(info: SplitInfo, n: int) -> list[tuple[int, int]]:
    """Sub-splits as (first example, end example); boundaries fall on whole files."""
    files_per_split = len(info.shard_lengths) // n
    bounds, start = [], 0
    for i in range(n):
        last = len(info.shard_lengths) if i == n - 1 else (i + 1) * files_per_split
        end = sum(info.shard_lengths[:last])
        bounds.append((start, end))
        start = end
    return bounds


def load_split(info: SplitInfo):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(info.num_examples, FEATURES)).astype(np.float32)
    y = rng.integers(0, NUM_CLASSES, size=info.num_examples).astype(np.int32)
    return x, y


class HostEvalInput:
    def __init__(self, info: SplitInfo, per_host_batch: int):
        start, end = even_splits(info, jax.process_count())[jax.process_index()]
        x, y = load_split(info)
        self.x, self.y = x[start:end], y[start:end]
        self.per_host_batch = per_host_batch

    def __iter__(self):
        for i in range(0, len(self.y), self.per_host_batch):
            xb, yb = self.x[i:i + self.per_host_batch], self.y[i:i + self.per_host_batch]
            yield xb, yb, np.ones(len(yb), np.float32)


class Evaluator:
    def __init__(self, mesh, params):
        self.batch_sharding = NamedSharding(mesh, P("data"))
        self.params = params
        self._step = jax.jit(self._eval_step)

    @staticmethod
    def _eval_step(params, x, y, mask):
        pred = jnp.argmax(x @ params, axis=-1)
        return jnp.sum((pred == y) * mask), jnp.sum(mask)

    def _globalize(self, arr):
        return jax.make_array_from_process_local_data(self.batch_sharding, arr)

    def evaluate(self, eval_input: HostEvalInput) -> dict:
        correct = count = 0.0
        for xb, yb, mb in eval_input:
            c, n = self._step(self.params, self._globalize(xb), self._globalize(yb), self._globalize(mb))
            correct += float(c)
            count += float(n)
        return {"accuracy": correct / count, "count": count}


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    params = jnp.asarray(np.random.default_rng(0).normal(size=(FEATURES, NUM_CLASSES)).astype(np.float32))
    evaluator = Evaluator(mesh, params)
    metrics = evaluator.evaluate(HostEvalInput(VALIDATION, per_host_batch=4))
    print("RESULT", f"accuracy={metrics['accuracy']:.4f} count={metrics['count']:.0f}")


if __name__ == "__main__":
    main()
