# GRPO top-entropy masking: the non-padding token entropies are gathered across processes, but each has a different count
# Source: https://github.com/huggingface/trl/issues/3933 (port of GRPOTrainer.get_high_entropy_mask to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class GRPOConfig:
    top_entropy_quantile: float = 0.2
    num_generations: int = 4
    max_completion_length: int = 12
    vocab: int = 16


class Accelerator:
    def gather(self, tensor):
        return multihost_utils.process_allgather(tensor, tiled=True)


class GRPOTrainer:
    def __init__(self, args: GRPOConfig):
        self.args = args
        self.accelerator = Accelerator()
        self.rng = np.random.default_rng(40 + jax.process_index())

    def _generate(self):
        # completions stop at EOS: their lengths (and so the completion mask) differ per process
        lengths = self.rng.integers(3, self.args.max_completion_length + 1, size=self.args.num_generations)
        mask = np.arange(self.args.max_completion_length)[None, :] < lengths[:, None]
        logits = self.rng.normal(size=(self.args.num_generations, self.args.max_completion_length, self.args.vocab))
        return jnp.asarray(logits, jnp.float32), jnp.asarray(mask)

    @staticmethod
    def entropy_from_logits(logits):
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def get_high_entropy_mask(self, entropies, mask, threshold):
        non_pad_entropies = np.asarray(entropies)[np.asarray(mask)]
        all_non_pad_entropies = self.accelerator.gather(non_pad_entropies)
        entropy_threshold = np.quantile(all_non_pad_entropies, threshold)
        return (entropies >= entropy_threshold) & mask

    def _compute_loss(self, logits, mask):
        entropies = self.entropy_from_logits(logits)
        if self.args.top_entropy_quantile < 1.0:
            entropy_mask = self.get_high_entropy_mask(entropies, mask, 1.0 - self.args.top_entropy_quantile)
        else:
            entropy_mask = mask
        local = np.array([float(jnp.sum(entropies * entropy_mask)), float(jnp.sum(entropy_mask))], np.float32)
        total = self.accelerator.gather(local[None, :]).sum(axis=0)
        return total[0] / max(total[1], 1.0)

    def train(self, steps=3):
        losses = []
        for _ in range(steps):
            logits, mask = self._generate()
            losses.append(round(float(self._compute_loss(logits, mask)), 5))
        return losses


def main():
    trainer = GRPOTrainer(GRPOConfig())
    for i, loss in enumerate(trainer.train()):
        print("RESULT step", i, "masked_entropy", loss)


if __name__ == "__main__":
    main()
