# Token batches are padded to the longest document across all processes before the sharded step
# Source: https://github.com/EleutherAI/bergson/pull/227
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
BY_ROW = NamedSharding(MESH, P("data", None))
VOCAB, DIM, PAD_ID = 32, 8, 0


def local_documents(rank: int, n_docs: int = 6) -> list[np.ndarray]:
    """This rank's slice of the corpus: documents of very different lengths."""
    rng = np.random.default_rng(7 + rank)
    return [rng.integers(1, VOCAB, size=int(rng.integers(3, 17))) for _ in range(n_docs)]


def allocate_batches(docs: list[np.ndarray], docs_per_batch: int) -> list[list[np.ndarray]]:
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    return [[docs[i] for i in order[s:s + docs_per_batch]] for s in range(0, len(order), docs_per_batch)]


def pad_and_tensor(batch: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    local_max = np.int32(max(len(doc) for doc in batch))
    max_len = int(multihost_utils.process_allgather(local_max).max())  # all_reduce(MAX)
    tokens = np.full((len(batch), max_len), PAD_ID, np.int32)
    mask = np.zeros((len(batch), max_len), np.float32)
    for row, doc in enumerate(batch):
        tokens[row, :len(doc)] = doc
        mask[row, :len(doc)] = 1.0
    return tokens, mask


@jax.jit
def batch_gradient(embed, tokens, mask):
    def loss(e):
        h = jax.nn.one_hot(tokens, VOCAB) @ e
        logits = h @ e.T
        nll = -jax.nn.log_softmax(logits)[..., 1] * mask
        return jnp.sum(nll) / jnp.sum(mask), nll
    (_, token_nll), grad = jax.value_and_grad(loss, has_aux=True)(embed)
    # per-token losses are written to the index on every process: gather them everywhere
    return grad, jax.lax.with_sharding_constraint(token_nll, NamedSharding(MESH, P()))


class GradientCollector:
    def __init__(self, embed):
        self.embed = embed
        self.norms: list[float] = []
        self.token_loss_total = 0.0

    def run(self, batches):
        for batch in batches:
            tokens, mask = pad_and_tensor(batch)
            g, token_nll = batch_gradient(self.embed,
                               jax.make_array_from_process_local_data(BY_ROW, tokens),
                               jax.make_array_from_process_local_data(BY_ROW, mask))
            self.norms.append(round(float(jnp.linalg.norm(g)), 4))
            self.token_loss_total += float(np.asarray(token_nll.addressable_data(0)).sum())
        return self.norms, round(self.token_loss_total, 3)


embed = jax.device_put(np.random.default_rng(0).normal(size=(VOCAB, DIM)).astype(np.float32) * 0.1,
                       NamedSharding(MESH, P()))
batches = allocate_batches(local_documents(jax.process_index()), docs_per_batch=3)
norms, token_loss = GradientCollector(embed).run(batches)
print("RESULT grad_norms", norms)
print("RESULT token_loss_total", token_loss)
