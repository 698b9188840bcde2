# RL trainer with dynamic (token-budget) micro-batching: ranks agree on the max micro-batch count, but a light rank builds an empty micro-batch and crashes
# Source: https://github.com/THUDM/slime/pull/1860
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp", None))
REPL = NamedSharding(MESH, P())
MAX_TOKENS_PER_MB, SEQ_PAD, VOCAB = 16, 32, 8


def rollout_lengths(rank, step):
    # multi-turn tool-call rollouts: rank 1 got short answers this step, rank 0 long ones
    rng = np.random.default_rng(50 * rank + step)
    hi = 14 if rank == 0 else 5
    return rng.integers(hi - 3, hi + 1, size=4)


def partition_by_tokens(lengths, budget):
    groups, cur, used = [], [], 0
    for i, n in enumerate(lengths):
        if cur and used + n > budget:
            groups.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += n
    if cur:
        groups.append(cur)
    return groups


def get_batch(samples, group):
    tokens = np.concatenate([samples[i] for i in group])
    mask = np.ones_like(tokens, dtype=np.float32)
    pad = SEQ_PAD - tokens.shape[0]
    return np.pad(tokens, (0, pad))[None, :], np.pad(mask, (0, pad))[None, :]


@jax.jit
def micro_step(w, acc, tokens, mask):
    def loss_fn(w):
        logits = w[tokens]                                   # [B, T, V]
        nll = -jax.nn.log_softmax(logits)[..., 0]
        return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return acc + g, loss


def train_step(w, step):
    rank = jax.process_index()
    lengths = rollout_lengths(rank, step)
    rng = np.random.default_rng(7 + rank + step)
    samples = [rng.integers(0, VOCAB, size=int(n)).astype(np.int32) for n in lengths]
    groups = partition_by_tokens(lengths, MAX_TOKENS_PER_MB)
    num_mb = int(np.max(multihost_utils.process_allgather(np.int32(len(groups)))))   # all_reduce(MAX)
    acc = jax.device_put(np.zeros((VOCAB, VOCAB), np.float32), REPL)
    losses = []
    for i in range(num_mb):
        group = groups[i] if i < len(groups) else []
        tokens, mask = get_batch(samples, group)
        acc, loss = micro_step(w, acc, jax.make_array_from_process_local_data(ROWS, tokens),
                               jax.make_array_from_process_local_data(ROWS, mask))
        losses.append(float(loss))
    return w - 0.1 * acc / num_mb, num_mb, float(np.mean(losses))


def main():
    w = jax.device_put(np.zeros((VOCAB, VOCAB), np.float32), REPL)
    for step in range(2):
        w, num_mb, loss = train_step(w, step)
        print("RESULT step", step, "micro_batches", num_mb, "loss", round(loss, 5))
    multihost_utils.sync_global_devices("done")
    print("RESULT w_sum", round(float(jnp.sum(w)), 5))


if __name__ == "__main__":
    main()
