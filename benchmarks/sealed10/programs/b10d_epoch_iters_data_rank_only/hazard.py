# train_iters is derived from the dataloader length on process 0 only (train_epochs mode); other processes keep the default
# Source: https://github.com/EleutherAI/gpt-neox/pull/1296
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass
from itertools import cycle
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SEQ, VOCAB, HIDDEN = 8, 16, 8


@dataclass
class NeoXArgs:
    train_micro_batch_size: int = 2
    train_epochs: Optional[int] = 2
    train_iters: int = 0  # computed from the data when train_epochs is set
    lr: float = 0.1
    num_samples: int = 10


def build_train_data_iterator(args: NeoXArgs):
    """Only the model-parallel rank 0 builds the dataloader; the others get their batches by broadcast."""
    if jax.process_index() == 0:
        rng = np.random.default_rng(42)
        samples = rng.integers(0, VOCAB, size=(args.num_samples, SEQ), dtype=np.int32)
        loader = [samples[i:i + args.train_micro_batch_size]
                  for i in range(0, args.num_samples, args.train_micro_batch_size)]
        if args.train_epochs:
            args.train_iters = len(loader) * args.train_epochs
        return cycle(loader)
    return None


def get_batch(data_iterator, args: NeoXArgs):
    if data_iterator is not None:
        tokens = next(data_iterator)
    else:
        tokens = np.zeros((args.train_micro_batch_size, SEQ), np.int32)
    return multihost_utils.broadcast_one_to_all(tokens)


class TensorParallelLM:
    def __init__(self, mesh):
        init = np.random.default_rng(0)
        self.embed = jax.device_put(init.normal(0, 0.2, (VOCAB, HIDDEN)).astype(np.float32), NamedSharding(mesh, P()))
        self.head = jax.device_put(init.normal(0, 0.2, (HIDDEN, VOCAB)).astype(np.float32),
                                   NamedSharding(mesh, P(None, "tp")))
        self._step = jax.jit(self._train_step)

    @staticmethod
    def _train_step(head, embed, tokens, lr):
        def loss_fn(head):
            logits = embed[tokens[:, :-1]] @ head
            logp = jax.nn.log_softmax(logits, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))
        loss, g = jax.value_and_grad(loss_fn)(head)
        return head - lr * g, loss

    def train_step(self, tokens, lr):
        self.head, loss = self._step(self.head, self.embed, tokens, lr)
        return float(loss)


def main():
    args = NeoXArgs()
    mesh = jax.make_mesh((jax.device_count(),), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
    model = TensorParallelLM(mesh)
    data_iterator = build_train_data_iterator(args)
    iteration, loss = 0, float("nan")
    while iteration < args.train_iters:
        loss = model.train_step(get_batch(data_iterator, args), args.lr)
        iteration += 1
    print("RESULT iterations", iteration)
    print("RESULT final_loss", round(loss, 5))


main()
