# Streaming training data split by host (file shards [process_index::process_count]); each host stops at the end of its own shards
# Source: https://github.com/borisdayma/dalle-mini/commit/ed93c8ab114018f3fb7b870b60e50ca4cccfcd1a
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import json
import os
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
DATA_DIR = os.path.join(tempfile.gettempdir(), "mcjax_s5_dalle_shards", os.environ.get("JOB_ID", "local"),
                        f"host{jax.process_index()}")
SHARD_SIZES = [7, 12, 5, 9, 6]  # encoded examples per shard file, as written by the preprocessing job


def braceexpand(pattern: str) -> list[str]:
    m = re.search(r"\{(\d+)\.\.(\d+)\}", pattern)
    return [pattern[:m.start()] + str(i) + pattern[m.end():] for i in range(int(m.group(1)), int(m.group(2)) + 1)]


def write_shards() -> str:
    os.makedirs(DATA_DIR, exist_ok=True)
    rng = np.random.default_rng(3)
    for i, n in enumerate(SHARD_SIZES):
        with open(os.path.join(DATA_DIR, f"train-{i}.jsonl"), "w") as f:
            for _ in range(n):
                f.write(json.dumps({"input_ids": rng.integers(0, 50, size=6).tolist()}) + "\n")
    return os.path.join(DATA_DIR, "train-{0..%d}.jsonl" % (len(SHARD_SIZES) - 1))


@dataclasses.dataclass
class Dataset:
    train_file: str | list
    multi_hosts: bool = dataclasses.field(init=False)

    def __post_init__(self):
        self.multi_hosts = jax.process_count() > 1
        if isinstance(self.train_file, str):
            self.train_file = braceexpand(self.train_file)
        # for list of files, split training data shards by host
        if isinstance(self.train_file, list) and self.multi_hosts:
            self.train_file = self.train_file[jax.process_index()::jax.process_count()]

    def _stream(self, epoch: int):
        files = list(self.train_file)
        np.random.default_rng(epoch).shuffle(files)
        for path in files:
            with open(path) as f:
                for line in f:
                    yield json.loads(line)

    def dataloader(self, batch_size: int, epoch: int):
        batch = []
        for item in self._stream(epoch):
            batch.append(item["input_ids"])
            if len(batch) == batch_size:
                yield {"input_ids": np.asarray(batch, np.int32)}
                batch = []


@jax.jit
def train_step(params, input_ids):
    def loss_fn(p):
        logits = p["emb"][input_ids] @ p["out"]
        return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda w, g: w - 0.1 * g, params, grads), loss


def main() -> None:
    ds = Dataset(train_file=write_shards())
    rng = np.random.default_rng(0)
    params = jax.device_put({"emb": jnp.asarray(rng.normal(size=(50, 8)), jnp.float32),
                             "out": jnp.asarray(rng.normal(size=(8, 50)), jnp.float32)}, NamedSharding(MESH, P()))
    per_host_batch, step, loss = 4, 0, None
    for epoch in range(2):
        for batch in ds.dataloader(per_host_batch, epoch):
            ids = jax.make_array_from_process_local_data(NamedSharding(MESH, P("batch")), batch["input_ids"])
            params, loss = train_step(params, ids)
            step += 1
    print("RESULT steps", step)
    print("RESULT loss", round(float(loss), 4))


if __name__ == "__main__":
    main()
