# Masked-LM pretraining with a Trainer-style loop over a streaming (iterable) corpus, in the
# style of transformers.Trainer + accelerate: with dispatch_batches the main process reads
# num_processes batches from the data loader, concatenates them and broadcasts the result, and
# every process keeps its slice; otherwise each process reads its own shard of the stream.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, PAD_ID = 50, 8, 0


@dataclass
class TrainingArguments:
    per_device_train_batch_size: int = 2
    learning_rate: float = 0.5
    dispatch_batches: bool = True


def streaming_corpus():
    rng = np.random.default_rng(42)
    for _ in range(16):
        yield {"input_ids": rng.integers(1, VOCAB, size=int(rng.integers(5, 13))).tolist()}


def collate_with_padding(samples):
    longest = max(len(s["input_ids"]) for s in samples)
    ids = np.full((len(samples), longest), PAD_ID, dtype=np.int32)
    for i, s in enumerate(samples):
        ids[i, :len(s["input_ids"])] = s["input_ids"]
    return ids


def batched(iterable, size):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []


class DataLoaderDispatcher:
    def __init__(self, dataset_fn, batch_size):
        self.dataset_fn, self.batch_size = dataset_fn, batch_size
        self.rank, self.world = jax.process_index(), jax.process_count()

    def _fetch_batches(self, iterator):
        batches = [collate_with_padding(next(iterator)) for _ in range(self.world)]
        return np.concatenate(batches, axis=0)

    def __iter__(self):
        iterator = batched(self.dataset_fn(), self.batch_size) if self.rank == 0 else None
        while True:
            info, batch = np.zeros(3, np.int32), None
            if self.rank == 0:
                try:
                    batch = self._fetch_batches(iterator)
                    info = np.array([0, *batch.shape], np.int32)
                except StopIteration:
                    info = np.array([1, 0, 0], np.int32)
            info = np.asarray(multihost_utils.broadcast_one_to_all(info))
            if info[0]:
                return
            if batch is None:
                batch = np.zeros(tuple(info[1:]), np.int32)
            batch = np.asarray(multihost_utils.broadcast_one_to_all(batch))
            yield batch[self.rank * self.batch_size:(self.rank + 1) * self.batch_size]


class IterableDatasetShard:
    def __init__(self, dataset_fn, batch_size):
        self.dataset_fn, self.batch_size = dataset_fn, batch_size
        self.rank, self.world = jax.process_index(), jax.process_count()

    def __iter__(self):
        for group in batched(self.dataset_fn(), self.batch_size * self.world):
            yield collate_with_padding(group[self.rank * self.batch_size:(self.rank + 1) * self.batch_size])


class Trainer:
    def __init__(self, args, train_dataset_fn):
        self.args = args
        rng = np.random.default_rng(0)
        self.params = {"embed": jnp.asarray(rng.normal(size=(VOCAB, HIDDEN)) / 4, jnp.float32),
                       "out": jnp.asarray(rng.normal(size=(HIDDEN, VOCAB)) / 4, jnp.float32)}
        self.train_dataset_fn = train_dataset_fn
        self._grad = jax.jit(jax.value_and_grad(self._mlm_loss))

    @staticmethod
    def _mlm_loss(params, ids):
        mask = (ids != PAD_ID).astype(jnp.float32)
        h = jnp.tanh(params["embed"][ids])
        logp = jax.nn.log_softmax(h @ params["out"])
        nll = -jnp.take_along_axis(logp, ids[..., None], axis=-1)[..., 0]
        return jnp.sum(nll * mask) / jnp.sum(mask)

    def get_train_dataloader(self):
        cls = DataLoaderDispatcher if self.args.dispatch_batches else IterableDatasetShard
        return cls(self.train_dataset_fn, self.args.per_device_train_batch_size)

    def train(self):
        losses = []
        for input_ids in self.get_train_dataloader():
            loss, grads = self._grad(self.params, jnp.asarray(input_ids))
            flat, tree = jax.tree_util.tree_flatten(grads)
            flat = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for g in flat]
            grads = jax.tree_util.tree_unflatten(tree, flat)
            self.params = jax.tree_util.tree_map(lambda p, g: p - self.args.learning_rate * g, self.params, grads)
            losses.append(float(np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean()))
        return losses


def main():
    args = TrainingArguments(per_device_train_batch_size=2, dispatch_batches=False)
    trainer = Trainer(args, streaming_corpus)
    losses = trainer.train()
    print("RESULT steps", len(losses))
    print("RESULT losses", [round(l, 4) for l in losses])


if __name__ == "__main__":
    main()
