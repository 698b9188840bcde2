# Supervised fine-tuning with an SFTTrainer-style class: the trainer tokenizes (and caches) the
# raw text dataset in its constructor, then runs a data-parallel training loop whose gradients
# are all-reduced across processes. Preprocessing is done once per node: the local main
# process writes the tokenized cache and the other processes of the node reuse it.
import json
import os
import shutil
import tempfile
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, MAX_LEN = 64, 8, 12


class PartialState:
    def __init__(self):
        self.process_index = jax.process_index()
        self.num_processes = jax.process_count()
        self.local_process_index = jax.process_index()  # one node, one device per process

    @property
    def is_local_main_process(self):
        return self.local_process_index == 0

    @contextmanager
    def local_main_process_first(self):
        if not self.is_local_main_process:
            multihost_utils.sync_global_devices("local_main_process_first")
        yield
        if self.is_local_main_process:
            multihost_utils.sync_global_devices("local_main_process_first")


class CharTokenizer:
    def __call__(self, text):
        ids = [1 + (ord(c) % (VOCAB - 1)) for c in text][:MAX_LEN]
        return {"input_ids": ids + [0] * (MAX_LEN - len(ids))}


class SFTTrainer:
    def __init__(self, train_dataset, tokenizer, cache_dir, lr=0.3, batch_size=2):
        self.state = PartialState()
        self.tokenizer, self.cache_dir, self.lr, self.batch_size = tokenizer, cache_dir, lr, batch_size
        rng = np.random.default_rng(1)
        self.params = {"embed": jnp.asarray(rng.normal(size=(VOCAB, HIDDEN)) / 3, jnp.float32),
                       "head": jnp.asarray(rng.normal(size=(HIDDEN, VOCAB)) / 3, jnp.float32)}
        self._grad = jax.jit(jax.value_and_grad(self._loss))
        # Pre-process the datasets only once per node. The remaining processes will use the cache.
        with self.state.local_main_process_first():
            train_dataset = self._prepare_dataset(train_dataset)
        self.train_dataset = train_dataset

    def _prepare_dataset(self, dataset):
        cache_file = os.path.join(self.cache_dir, "tokenized.json")
        if os.path.exists(cache_file):
            with open(cache_file) as f:
                return json.load(f)
        tokenized = [self.tokenizer(example["text"]) for example in dataset]
        os.makedirs(self.cache_dir, exist_ok=True)
        with open(cache_file, "w") as f:
            json.dump(tokenized, f)
        return tokenized

    @staticmethod
    def _loss(params, ids):
        h = jnp.tanh(params["embed"][ids[:, :-1]])
        logp = jax.nn.log_softmax(h @ params["head"])
        tgt = ids[:, 1:]
        mask = (tgt != 0).astype(jnp.float32)
        nll = -jnp.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0]
        return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)

    def get_train_dataloader(self):
        shard = self.train_dataset[self.state.process_index::self.state.num_processes]
        for i in range(0, len(shard) - self.batch_size + 1, self.batch_size):
            yield np.array([ex["input_ids"] for ex in shard[i:i + self.batch_size]], np.int32)

    def train(self):
        losses = []
        for ids in self.get_train_dataloader():
            loss, grads = self._grad(self.params, jnp.asarray(ids))
            grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for k, g in grads.items()}
            self.params = {k: self.params[k] - self.lr * grads[k] for k in self.params}
            losses.append(float(np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean()))
        return losses


def main():
    texts = ["The quick brown fox", "jumps over the dog", "SPMD programs must agree", "on every process",
             "hello multi host jax", "tokenize once per node", "then train in sync", "the end of data"]
    cache_dir = os.path.join(tempfile.gettempdir(), f"sft_cache_{os.environ.get('JOB_ID', 'local')}")
    trainer = SFTTrainer([{"text": t} for t in texts], CharTokenizer(), cache_dir)
    losses = trainer.train()
    multihost_utils.sync_global_devices("train_done")
    if trainer.state.is_local_main_process:
        shutil.rmtree(cache_dir, ignore_errors=True)
    print("RESULT steps", len(losses))
    print("RESULT losses", [round(l, 4) for l in losses])


if __name__ == "__main__":
    main()
