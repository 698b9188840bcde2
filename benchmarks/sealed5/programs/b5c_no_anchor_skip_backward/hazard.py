# Draft-model trainer skips a micro-batch per rank when no sample is long enough to form a block
# Source: https://github.com/NVIDIA-NeMo/Automodel/pull/2468
# Port to multi-process JAX of a DDP hang in the DFlash speculative-decoding trainer.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
BLOCK = 4


class NoValidAnchorsError(ValueError):
    pass


class DFlashTrainer:
    def __init__(self, block_size: int):
        self.block_size = block_size

    def build_blocks(self, samples: list) -> np.ndarray:
        blocks = [s[a:a + self.block_size] for s in samples
                  for a in range(0, len(s) - self.block_size + 1, self.block_size)][:2]
        if not blocks:
            raise NoValidAnchorsError("every sample in the micro-batch is shorter than a block")
        while len(blocks) < 2:
            blocks.append(np.zeros(self.block_size, np.float32))
        return np.stack(blocks).astype(np.float32)


@partial(jax.jit, out_shardings=REPL)
def backward(w, blocks):
    # the data-parallel gradient: reduced over every rank's blocks
    ctx, target = blocks[:, :-1], blocks[:, -1]
    return jax.grad(lambda w: jnp.mean((ctx @ w - target) ** 2))(w)


def micro_batches(rank: int, steps: int):
    # each rank reads its own shard of prompts of varying length
    rng = np.random.default_rng(14 + rank)
    for step in range(steps):
        lengths = rng.integers(1, 12, size=2)
        yield [np.arange(n, dtype=np.float32) / (10 + rank + step) for n in lengths]


def train(trainer: DFlashTrainer, steps: int = 5):
    w = jax.device_put(np.zeros(BLOCK - 1, np.float32), REPL)
    skipped = 0
    for samples in micro_batches(jax.process_index(), steps):
        try:
            blocks = trainer.build_blocks(samples)
        except NoValidAnchorsError:
            skipped += 1
            continue  # nothing to train on in this micro-batch
        grad = backward(w, jax.make_array_from_process_local_data(DATA, blocks))
        w = w - 0.5 * grad
    return w, skipped


w, skipped = train(DFlashTrainer(BLOCK))
print("RESULT skipped", skipped)
print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())
