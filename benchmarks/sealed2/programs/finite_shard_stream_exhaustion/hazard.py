# Each process streams its own parquet-like shards without wraparound; the rank with less data leaves the loop
# Source: https://github.com/sandyresearch/parcae/issues/12
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os
from typing import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
PARQUET_FILES = [f"train-{i:05d}.parquet" for i in range(5)]
ROWS_PER_FILE = {name: 6 + 2 * i for i, name in enumerate(PARQUET_FILES)}
SEQ_LEN, MICRO_BATCH, MAX_STEPS = 8, 2, 40


class ParquetStreamPure:
    def __init__(self, files: list[str], repetitions: int | None = None):
        self.parquet_files = files[jax.process_index()::jax.process_count()]
        self.repetitions = repetitions
        self._state = {"file_idx": 0, "row": 0, "epoch": 0}

    def __iter__(self) -> Iterator[np.ndarray]:
        while self._state["file_idx"] < len(self.parquet_files):
            name = self.parquet_files[self._state["file_idx"]]
            rng = np.random.default_rng(self._state["file_idx"])
            for _ in range(ROWS_PER_FILE[name] // MICRO_BATCH):
                yield rng.integers(0, 50, size=(MICRO_BATCH, SEQ_LEN)).astype(np.int32)
            self._state["file_idx"] += 1
            if self._state["file_idx"] == len(self.parquet_files) and self.repetitions is not None:
                self._state["epoch"] += 1
                if self._state["epoch"] < self.repetitions:
                    self._state["file_idx"] = 0


@jax.jit
def train_step(emb, tokens):
    def loss_fn(e):
        h = jax.nn.one_hot(tokens, e.shape[0]) @ e
        return jnp.mean((h[:, 1:] - h[:, :-1]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(emb)
    return emb - 0.5 * g, loss


emb = jax.device_put(jnp.linspace(0.0, 1.0, 50 * 4).reshape(50, 4), REPL)
stream = ParquetStreamPure(PARQUET_FILES, repetitions=None)
step = 0
for batch in stream:
    emb, loss = train_step(emb, jax.make_array_from_process_local_data(DATA, batch))
    step += 1
    if step >= MAX_STEPS:
        break
if jax.process_index() == 0:
    print(f"training complete after {step} steps", flush=True)
print("RESULT", step, round(float(loss), 5))
