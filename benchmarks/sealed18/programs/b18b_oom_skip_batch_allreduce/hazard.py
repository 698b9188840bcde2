# Dialogue-model fine-tuning loop that recovers from out-of-memory batches by skipping them
# Source: https://github.com/bme-chatbots/dialogue-generation/issues/14
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logger = logging.getLogger("train")

VOCAB = 32
HIDDEN = 8
MAX_ACTIVATION_ELEMS = 2048  # device memory budget for attention scores (batch * len * len)
LR = 0.05


class OutOfMemoryError(RuntimeError):
    pass


DIALOGUE_LENGTHS = [12, 14, 18, 10, 9, 16, 15, 40, 11, 13]  # tokens per dialogue in the training split


def dialogues(rank, world_size):
    rng = np.random.default_rng(3 + rank)
    lengths = DIALOGUE_LENGTHS[rank::world_size]
    return [rng.integers(2, VOCAB, size=n) for n in lengths]


def collate(batch):
    width = max(len(d) for d in batch)
    out = np.zeros((len(batch), width), np.int32)
    for i, d in enumerate(batch):
        out[i, :len(d)] = d
    return out


def loss_fn(params, tokens):
    h = params["embed"][tokens]
    scores = h @ h.transpose(0, 2, 1) / np.sqrt(HIDDEN)
    ctx = jax.nn.softmax(scores, axis=-1) @ h
    logits = ctx @ params["embed"].T
    mask = (tokens[:, 1:] > 0).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def forward_backward(params, tokens):
    b, n = tokens.shape
    if b * n * n > MAX_ACTIVATION_ELEMS:
        raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate attention for batch {b}x{n}")
    return jax.value_and_grad(loss_fn)(params, jnp.asarray(tokens))


class DataParallel:
    def __init__(self, mesh):
        self.sharding = NamedSharding(mesh, P("dp"))
        self._mean = jax.jit(lambda a: jnp.mean(a, axis=0), out_shardings=NamedSharding(mesh, P()))

    def allreduce_grads(self, grads):
        flat = np.asarray(grads["embed"]).ravel()[None, :]
        arr = jax.make_array_from_process_local_data(self.sharding, flat)
        mean = np.asarray(self._mean(arr).addressable_shards[0].data)
        return {"embed": jnp.asarray(mean.reshape(grads["embed"].shape))}


def train(mesh, params, data, batch_size=2):
    dp = DataParallel(mesh)
    skipped, losses = 0, []
    for start in range(0, len(data), batch_size):
        tokens = collate(data[start:start + batch_size])
        try:
            loss, grads = forward_backward(params, tokens)
        except OutOfMemoryError as e:
            logger.warning("ran out of memory, skipping batch: %s", e)
            skipped += 1
            continue
        grads = dp.allreduce_grads(grads)
        params = {"embed": params["embed"] - LR * grads["embed"]}
        losses.append(float(loss))
    return params, skipped


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    params = {"embed": jax.random.normal(jax.random.PRNGKey(0), (VOCAB, HIDDEN)) * 0.1}
    params, skipped = train(mesh, params, dialogues(jax.process_index(), jax.process_count()))
    print("RESULT embed_norm", round(float(jnp.linalg.norm(params["embed"])), 5))
    print("RESULT embed_sum", round(float(jnp.sum(params["embed"])), 5))


if __name__ == "__main__":
    main()
