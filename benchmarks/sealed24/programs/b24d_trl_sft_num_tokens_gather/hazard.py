import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAD_TOKEN_ID = 0
VOCAB = 32


@dataclass
class SFTConfig:
    per_device_train_batch_size: int = 4
    max_steps: int = 3
    learning_rate: float = 0.1
    max_length: int = 24


def load_conversations(rank, n=12):
    rng = np.random.default_rng(100 + rank)
    lengths = rng.integers(4, 20, size=n)
    return [rng.integers(1, VOCAB, size=int(L)).tolist() for L in lengths]


class DataCollatorForLanguageModeling:
    def __call__(self, examples):
        longest = max(len(e) for e in examples)
        input_ids = np.full((len(examples), longest), PAD_TOKEN_ID, dtype=np.int32)
        attention_mask = np.zeros((len(examples), longest), dtype=np.int32)
        for i, e in enumerate(examples):
            input_ids[i, :len(e)] = e
            attention_mask[i, :len(e)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask}


def _loss_fn(emb, input_ids, attention_mask):
    h = emb[input_ids[:, :-1]]
    logits = h @ emb.T
    logp = jax.nn.log_softmax(logits, -1)
    tgt = jnp.take_along_axis(logp, input_ids[:, 1:, None], -1)[..., 0]
    m = attention_mask[:, 1:].astype(jnp.float32)
    return -(tgt * m).sum() / jnp.maximum(m.sum(), 1.0)


class SFTTrainer:
    def __init__(self, args, train_dataset):
        self.args = args
        self.train_dataset = train_dataset
        self.collator = DataCollatorForLanguageModeling()
        self.emb = jnp.asarray(np.random.default_rng(0).normal(size=(VOCAB, 8)) * 0.1, jnp.float32)
        self._grad = jax.jit(jax.value_and_grad(_loss_fn))
        self._total_train_tokens = 0
        self._metrics = {"train": {}}

    def get_train_dataloader(self):
        bs = self.args.per_device_train_batch_size
        for i in range(0, len(self.train_dataset), bs):
            yield self.collator(self.train_dataset[i:i + bs])

    def compute_loss(self, inputs):
        loss, grad = self._grad(self.emb, inputs["input_ids"], inputs["attention_mask"])
        self._total_train_tokens += int(
            np.asarray(multihost_utils.process_allgather(inputs["attention_mask"])).sum())
        self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
        return loss, grad

    def training_step(self, inputs):
        loss, grad = self.compute_loss(inputs)
        grad = np.asarray(multihost_utils.process_allgather(np.asarray(grad))).mean(0)
        self.emb = self.emb - self.args.learning_rate * grad
        return float(np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean())

    def train(self):
        losses = []
        for step, inputs in enumerate(self.get_train_dataloader()):
            if step >= self.args.max_steps:
                break
            losses.append(self.training_step(inputs))
        return losses


def main():
    args = SFTConfig()
    trainer = SFTTrainer(args, load_conversations(jax.process_index()))
    losses = trainer.train()
    print("RESULT steps", len(losses))
    print("RESULT num_tokens", trainer._metrics["train"]["num_tokens"])
    print("RESULT loss", [round(l, 4) for l in losses])
    print("RESULT emb_checksum", round(float(jnp.sum(trainer.emb)), 4))


if __name__ == "__main__":
    main()
