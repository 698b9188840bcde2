# SFT trainer: get_sharding() checks fsdp divisibility on the process-local batch shape and falls back to replication
# Source: https://github.com/google/tunix/commit/edb4721a3cb8819a72252746d9c9ef94014a1965
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GLOBAL_BATCH, SEQ, VOCAB, STEPS = 2, 6, 16, 4


def get_sharding(mesh, x):
    """Shard the batch dimension over fsdp when it divides evenly, else replicate."""
    fsdp = mesh.shape["fsdp"]
    if x.shape[0] % fsdp == 0:
        return NamedSharding(mesh, P("fsdp", *([None] * (x.ndim - 1))))
    return NamedSharding(mesh, P())


def shard_input(mesh, local_batch):
    return {k: jax.make_array_from_process_local_data(get_sharding(mesh, v), v) for k, v in local_batch.items()}


def local_batches(rank, local_bs):
    """Per-process shard of the translation dataset (sharded by JAX process)."""
    rng = np.random.default_rng(1234)
    data = rng.integers(1, VOCAB, size=(GLOBAL_BATCH * STEPS, SEQ)).astype(np.int32)
    for step in range(STEPS):
        rows = data[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH][rank::jax.process_count()][:local_bs]
        yield {"input_tokens": rows, "target_mask": (rows > 3).astype(np.float32)}


@jax.jit
def train_step(emb, batch):
    def loss_fn(e):
        h = e[batch["input_tokens"]]
        logits = h @ e.T
        nll = -jax.nn.log_softmax(logits)[..., 0]
        return jnp.sum(nll * batch["target_mask"]) / jnp.maximum(jnp.sum(batch["target_mask"]), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(emb)
    return emb - 0.1 * g, loss


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    local_bs = GLOBAL_BATCH // jax.process_count()
    emb = jax.device_put(jnp.asarray(np.cos(np.arange(VOCAB * 4, dtype=np.float32)).reshape(VOCAB, 4)),
                         NamedSharding(mesh, P()))
    for local in local_batches(rank, local_bs):
        batch = shard_input(mesh, local)
        emb, loss = train_step(emb, batch)
    print("RESULT loss", round(float(loss.addressable_shards[0].data), 5))
    print("RESULT emb_sum", round(float(np.asarray(emb.addressable_shards[0].data).sum()), 5))


if __name__ == "__main__":
    main()
