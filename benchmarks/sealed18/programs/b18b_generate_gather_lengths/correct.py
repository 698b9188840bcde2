# Distributed evaluation of a seq2seq model: each process generates for its slice of the eval set, then predictions are gathered
# Source: https://github.com/huggingface/accelerate/issues/1326
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAD_ID = 0
EOS_ID = 1
VOCAB = 37
MAX_NEW_TOKENS = 12
EVAL_BATCH = 2

EVAL_PROMPTS = [
    [5, 9, 2], [11, 4], [7, 7, 7, 3], [2, 30],
    [13, 8, 21], [6], [19, 2, 2], [25, 14, 9, 4],
]


class ToyDecoder:
    """Stand-in for model.generate(): greedy decoding with a fixed transition table."""

    def __init__(self, vocab):
        key = jax.random.PRNGKey(0)
        self.table = jax.random.randint(key, (vocab,), 1, vocab)

    def next_token(self, last):
        return self.table[last]

    def generate(self, prompts):
        outs = []
        for prompt in prompts:
            seq = []
            last = jnp.asarray(prompt[-1])
            for _ in range(MAX_NEW_TOKENS):
                last = self.next_token(last)
                tok = int(last)
                seq.append(tok)
                if tok == EOS_ID:
                    break
            outs.append(seq)
        width = max(len(s) for s in outs)
        batch = np.full((len(outs), width), PAD_ID, np.int32)
        for i, s in enumerate(outs):
            batch[i, :len(s)] = s
        return batch


def eval_dataloader(prompts, batch_size):
    rank, world = jax.process_index(), jax.process_count()
    local = prompts[rank::world]
    for start in range(0, len(local), batch_size):
        yield local[start:start + batch_size]


def gather(tensor):
    return np.asarray(multihost_utils.process_allgather(tensor))


def pad_across_processes(tensor, dim=1, pad_index=PAD_ID):
    sizes = gather(np.array([tensor.shape[dim]], np.int32))
    max_size = int(sizes.max())
    if max_size == tensor.shape[dim]:
        return tensor
    new_shape = list(tensor.shape)
    new_shape[dim] = max_size
    padded = np.full(new_shape, pad_index, tensor.dtype)
    padded[tuple(slice(0, n) for n in tensor.shape)] = tensor
    return padded


def evaluate(model):
    predictions = []
    for batch in eval_dataloader(EVAL_PROMPTS, EVAL_BATCH):
        out = model.generate(batch)
        out = pad_across_processes(out, dim=1, pad_index=PAD_ID)
        out = gather(out)
        for row in out.reshape(-1, out.shape[-1]):
            predictions.append([int(t) for t in row if t != PAD_ID])
    return predictions


def main():
    model = ToyDecoder(VOCAB)
    predictions = evaluate(model)
    lengths = [len(p) for p in predictions]
    print("RESULT num_predictions", len(predictions))
    print("RESULT lengths", lengths)
    print("RESULT checksum", sum(sum(p) for p in predictions))


if __name__ == "__main__":
    main()
