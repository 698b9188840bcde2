# A GPT validation pass slices each global micro-batch by data-parallel rank and pads the leftover tail so every rank gets a full window
# Source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5527
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VAL_SAMPLES, MICRO_BATCH, SEQ, VOCAB, DIM = 5, 2, 8, 32, 16
MESH = jax.make_mesh((jax.device_count(),), ("dp",))


class PretrainingSampler:
    """Megatron-style sequential sampler: one global micro-batch, then this rank's window of it."""

    def __init__(self, total_samples, consumed_samples, micro_batch_size, dp_rank, dp_size, drop_last):
        self.total, self.consumed, self.mbs = total_samples, consumed_samples, micro_batch_size
        self.dp_rank, self.dp_size, self.drop_last = dp_rank, dp_size, drop_last

    def _window(self):
        start = self.dp_rank * self.mbs
        return start, start + self.mbs

    def __iter__(self):
        batch = []
        for idx in range(self.consumed, self.total):
            batch.append(idx)
            if len(batch) == self.mbs * self.dp_size:
                s, e = self._window()
                yield batch[s:e]
                batch = []
        if batch and not self.drop_last:
            batch += [-1] * (self.mbs * self.dp_size - len(batch))  # empty slots, masked out of the loss
            s, e = self._window()
            yield batch[s:e]


def validation_tokens():
    rng = np.random.default_rng(3)  # the same validation set on every process
    return rng.integers(0, VOCAB, size=(VAL_SAMPLES, SEQ + 1)).astype(np.int32)


def collate(tokens, indices):
    """Stack the samples of one micro-batch; index -1 is an empty slot with zero loss weight."""
    rows = [tokens[i] if i >= 0 else np.zeros(SEQ + 1, np.int32) for i in indices]
    weight = np.array([1.0 if i >= 0 else 0.0 for i in indices], np.float32)
    batch = np.stack(rows)
    return batch[:, :-1], batch[:, 1:], weight


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("dp")), a)


@jax.jit
def eval_step(params, inputs, labels, weight):
    h = jax.nn.one_hot(inputs, VOCAB) @ params["embed"]
    logits = h @ params["embed"].T
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), labels[..., None], axis=-1)[..., 0]
    return jnp.sum(nll.mean(axis=1) * weight), jnp.sum(weight)


def main():
    params = {"embed": jnp.asarray(np.random.default_rng(0).normal(0, 0.3, (VOCAB, DIM)).astype(np.float32))}
    tokens = validation_tokens()
    sampler = PretrainingSampler(VAL_SAMPLES, 0, MICRO_BATCH, jax.process_index(), jax.process_count(),
                                 drop_last=False)
    total, count, steps = 0.0, 0.0, 0
    for indices in sampler:
        inputs, labels, weight = collate(tokens, indices)
        loss_sum, n = eval_step(params, shard(inputs), shard(labels), shard(weight))
        total, count, steps = total + float(loss_sum), count + float(n), steps + 1
    print("RESULT val_steps", steps)
    print("RESULT val_samples", int(count))
    print("RESULT val_loss", round(total / count, 5))


main()
