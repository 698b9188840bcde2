# StreamingDataset-style training: samples are stored as serialized records in shards, each rank
# iterates its partition of sample ids, decodes records and batches them (drop_last). Records that
# fail to decode are skipped so one bad record does not kill a long run.
import json
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SAMPLES = 64
BATCH_SIZE = 8
DIM = 4


def write_shard():
    rng = np.random.default_rng(11)
    records = []
    for i in range(NUM_SAMPLES):
        x = rng.normal(size=DIM).round(4).tolist()
        payload = zlib.compress(json.dumps({"id": i, "x": x, "y": float(sum(x) > 0)}).encode())
        if i == 45:
            payload = payload[: len(payload) // 2]
        records.append(payload)
    return records


class StreamingDataset:
    def __init__(self, records, rank, world, batch_size):
        self.records = records
        per_rank = len(records) // world
        self.sample_ids = list(range(rank * per_rank, (rank + 1) * per_rank))
        self.batch_size = batch_size
        self.num_skipped = 0

    def get_item(self, idx):
        return json.loads(zlib.decompress(self.records[idx]))

    def __iter__(self):
        for idx in self.sample_ids:
            yield self.get_valid_item(idx)

    def get_valid_item(self, idx):
        for offset in range(len(self.sample_ids)):
            candidate = self.sample_ids[(self.sample_ids.index(idx) + offset) % len(self.sample_ids)]
            try:
                return self.get_item(candidate)
            except (zlib.error, json.JSONDecodeError):
                self.num_skipped += 1
        raise RuntimeError("no decodable sample in partition")

    def batches(self):
        buf = []
        for sample in self:
            buf.append(sample)
            if len(buf) == self.batch_size:
                yield (np.array([s["x"] for s in buf], dtype=np.float32),
                       np.array([s["y"] for s in buf], dtype=np.float32))
                buf = []


def bce(w, x, y):
    logits = x @ w
    return jnp.mean(jnp.maximum(logits, 0) - logits * y + jnp.log1p(jnp.exp(-jnp.abs(logits))))


def main():
    rank, world = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    dataset = StreamingDataset(write_shard(), rank, world, BATCH_SIZE)
    grad_step = jax.jit(jax.value_and_grad(bce))
    w = jnp.zeros(DIM)
    steps = 0
    for epoch in range(3):
        for x, y in dataset.batches():
            gx = jax.make_array_from_process_local_data(sharding, x)
            gy = jax.make_array_from_process_local_data(sharding, y)
            loss, g = grad_step(w, gx, gy)
            w = w - 0.5 * g
            steps += 1
        print(f"epoch {epoch}: steps={steps} loss={float(loss):.4f} skipped={dataset.num_skipped}")
    print("RESULT steps", steps)
    print("RESULT weights", [round(float(v), 4) for v in w])


if __name__ == "__main__":
    main()
