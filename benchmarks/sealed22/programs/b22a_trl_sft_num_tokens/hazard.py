# Supervised fine-tuning loop in the style of an SFT trainer: each rank's collator pads its own
# micro-batch to the longest example in it, the loss gradient is all-reduced, and the trainer
# logs `num_tokens`, the number of (non-padding) tokens seen so far by the whole job.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, PAD = 24, 8, 0


def gather_for_metrics(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def load_conversations(rank, num=6, seed=17):
    rng = np.random.default_rng(seed + rank)
    return [rng.integers(1, VOCAB, size=int(rng.integers(4, 12))).astype(np.int32) for _ in range(num)]


def data_collator(examples):
    max_len = max(len(e) for e in examples)
    input_ids = np.full((len(examples), max_len), PAD, np.int32)
    attention_mask = np.zeros((len(examples), max_len), np.int32)
    for i, e in enumerate(examples):
        input_ids[i, :len(e)] = e
        attention_mask[i, :len(e)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def lm_loss(params, input_ids, attention_mask):
    logits = params["emb"][input_ids[:, :-1]] @ params["out"]
    logp = jax.nn.log_softmax(logits, -1)
    tok = jnp.take_along_axis(logp, input_ids[:, 1:, None], -1)[..., 0]
    mask = attention_mask[:, 1:].astype(jnp.float32)
    return -(tok * mask).sum() / mask.sum()


loss_and_grad = jax.jit(jax.value_and_grad(lm_loss))


class SFTTrainer:
    def __init__(self, lr=0.3, batch_size=2):
        k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        self.params = {"emb": jax.random.normal(k1, (VOCAB, DIM)) * 0.2, "out": jax.random.normal(k2, (DIM, VOCAB)) * 0.2}
        self.lr = lr
        self.batch_size = batch_size
        self._total_train_tokens = 0
        self._metrics = {"train": {}}

    def compute_loss(self, inputs):
        loss, grads = loss_and_grad(self.params, inputs["input_ids"], inputs["attention_mask"])
        self._total_train_tokens += int(gather_for_metrics(inputs["attention_mask"]).sum())
        self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
        return loss, grads

    def train(self, dataset):
        for start in range(0, len(dataset), self.batch_size):
            inputs = data_collator(dataset[start:start + self.batch_size])
            loss, grads = self.compute_loss(inputs)
            grads = jax.tree_util.tree_map(lambda g: gather_for_metrics(g).mean(0), grads)
            self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)
        return float(loss)


def main():
    trainer = SFTTrainer()
    trainer.train(load_conversations(jax.process_index()))
    w = gather_for_metrics(trainer.params["out"])
    print("RESULT num_tokens", trainer._metrics["train"]["num_tokens"])
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
