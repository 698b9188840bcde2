# Dynamic (token-budget) batching of each host's own examples: batch shapes and counts differ between hosts
# Source: https://github.com/google/flax/issues/232
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
TARGET_BATCH_TOKENS = 64
BUCKET_BOUNDARIES = [8, 16, 32]
VOCAB = 32


def host_examples() -> list[np.ndarray]:
    rng = np.random.default_rng(jax.process_index())
    lengths = rng.integers(3, 30, size=12)
    return [rng.integers(1, VOCAB, size=n).astype(np.int32) for n in lengths]


def bucket_by_sequence_length(examples: list[np.ndarray]):
    """Per-bucket batches whose size is the token budget divided by the bucket length."""
    buckets: dict[int, list[np.ndarray]] = {b: [] for b in BUCKET_BOUNDARIES}
    for ex in examples:
        bound = next(b for b in BUCKET_BOUNDARIES if len(ex) <= b)
        buckets[bound].append(ex)
    for bound, items in buckets.items():
        per_batch = max(1, TARGET_BATCH_TOKENS // bound)
        for i in range(0, len(items), per_batch):
            chunk = items[i:i + per_batch]
            batch = np.zeros((len(chunk), bound), np.int32)
            for row, ex in enumerate(chunk):
                batch[row, :len(ex)] = ex
            yield batch


@jax.jit
def eval_step(emb, tokens):
    h = jax.nn.one_hot(tokens, VOCAB) @ emb
    weights = (tokens > 0).astype(jnp.float32)
    return jnp.sum(jnp.sum(h * h, axis=-1) * weights), jnp.sum(weights)


emb = jax.device_put(jnp.linspace(-1.0, 1.0, VOCAB * 4).reshape(VOCAB, 4), REPL)
total = count = 0.0
for batch in bucket_by_sequence_length(host_examples()):
    s, n = eval_step(emb, jax.make_array_from_process_local_data(DATA, batch))
    total, count = total + float(s), count + float(n)

print("RESULT", round(total / count, 5), int(count))
