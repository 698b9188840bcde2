# An SFTTrainer-style loop: each data-parallel rank tokenizes its own conversations, the collator pads
# every batch to the longest sequence in that batch, the causal-LM loss gradient is all-reduced, and the
# trainer logs the mean token accuracy of the step across all ranks.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, PAD, IGNORE = 24, 8, 0, -100


@dataclass
class SFTConfig:
    per_device_train_batch_size: int = 4
    learning_rate: float = 0.5
    num_train_epochs: int = 2
    logging_steps: int = 1


def load_conversations(rank, n=12):
    rng = np.random.default_rng(7 + rank)
    return [rng.integers(1, VOCAB, size=int(rng.integers(5, 17))) for _ in range(n)]


class DataCollatorForLanguageModeling:
    def __call__(self, examples):
        max_len = max(len(e) for e in examples)
        ids = np.full((len(examples), max_len), PAD, np.int32)
        labels = np.full((len(examples), max_len), IGNORE, np.int32)
        for i, e in enumerate(examples):
            ids[i, :len(e)] = e
            labels[i, :len(e) - 1] = e[1:]
        return {"input_ids": ids, "labels": labels}


def forward(params, input_ids):
    h = params["emb"][input_ids]
    return h @ params["out"]


def loss_fn(params, input_ids, labels):
    logits = forward(params, input_ids)
    mask = labels != IGNORE
    logp = jax.nn.log_softmax(logits)
    nll = -jnp.take_along_axis(logp, jnp.where(mask, labels, 0)[..., None], axis=-1)[..., 0]
    return jnp.sum(nll * mask) / jnp.maximum(mask.sum(), 1), logits


def compute_token_accuracy(logits, labels, ignore_index=IGNORE):
    predictions = logits.argmax(axis=-1)
    mask = labels != ignore_index
    correct = ((predictions == labels) & mask).sum()
    total = mask.sum()
    return float(correct) / max(int(total), 1)


class SFTTrainer:
    def __init__(self, args: SFTConfig, train_dataset, rank):
        self.args, self.train_dataset, self.rank = args, train_dataset, rank
        k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        self.params = {"emb": jax.random.normal(k1, (VOCAB, DIM)) * 0.3,
                       "out": jax.random.normal(k2, (DIM, VOCAB)) * 0.3}
        self.collator = DataCollatorForLanguageModeling()
        self._step = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))
        self._metrics = {"mean_token_accuracy": []}

    def gather(self, x):
        return np.asarray(multihost_utils.process_allgather(np.asarray(x)))

    def compute_loss(self, inputs):
        (loss, logits), grads = self._step(self.params, inputs["input_ids"], inputs["labels"])
        all_logits = self.gather(logits)
        all_labels = self.gather(inputs["labels"])
        accuracy = compute_token_accuracy(all_logits.reshape(-1, VOCAB), all_labels.reshape(-1))
        self._metrics["mean_token_accuracy"].append(accuracy)
        return loss, grads

    def train(self):
        bs = self.args.per_device_train_batch_size
        for epoch in range(self.args.num_train_epochs):
            for i in range(0, len(self.train_dataset), bs):
                inputs = self.collator(self.train_dataset[i:i + bs])
                loss, grads = self.compute_loss(inputs)
                grads = jax.tree_util.tree_map(lambda g: self.gather(g).mean(0), grads)
                self.params = jax.tree_util.tree_map(lambda p, g: p - self.args.learning_rate * g,
                                                     self.params, grads)
        return self._metrics


def main():
    rank = jax.process_index()
    trainer = SFTTrainer(SFTConfig(), load_conversations(rank), rank)
    metrics = trainer.train()
    w = trainer.gather(trainer.params["out"])
    print("RESULT steps", len(metrics["mean_token_accuracy"]))
    print("RESULT last_mean_token_accuracy", round(metrics["mean_token_accuracy"][-1], 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
