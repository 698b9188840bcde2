# A PaddleNLP-style Trainer with a distributed dataloader: inside a tensor-parallel group only the data
# process (tp rank 0) reads the streaming dataset and every batch is broadcast to the other ranks of the
# group. Each rank owns half of the output columns of a linear model; the loss is all-reduced per step.
# The run resumes from a checkpoint, so the batches already consumed in the current epoch are skipped.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES, OUT = 6, 4


class IterableDataset:
    pass


class StreamingJsonlDataset(IterableDataset):
    def __init__(self, num_examples=96, seed=0):
        self.num_examples, self.seed = num_examples, seed

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        for _ in range(self.num_examples):
            x = rng.normal(size=FEATURES).astype(np.float32)
            yield x, np.tanh(x[:OUT] + x[FEATURES - OUT:]).astype(np.float32)


class BatchSampler:
    def __init__(self, batch_size):
        self.batch_size, self.start_batch = batch_size, 0


class DistDataLoader:
    def __init__(self, dataset, batch_size, is_iterable_dataset=False):
        self.dataset, self.batch_size = dataset, batch_size
        if isinstance(dataset, IterableDataset) or (dataset is None and is_iterable_dataset):
            self.batch_sampler = None  # streaming: no index sampler, position is only known by reading
        else:
            self.batch_sampler = BatchSampler(batch_size)

    def _local_batches(self):
        buf = []
        for ex in self.dataset:
            buf.append(ex)
            if len(buf) == self.batch_size:
                yield tuple(np.stack(t) for t in zip(*buf))
                buf = []

    def __iter__(self):
        it = self._local_batches() if self.dataset is not None else None
        empty = (np.zeros((self.batch_size, FEATURES), np.float32), np.zeros((self.batch_size, OUT), np.float32))
        while True:
            batch = next(it, None) if it is not None else empty
            has_data = np.int32(batch is not None)
            x, y, has_data = multihost_utils.broadcast_one_to_all(
                (*(batch if batch is not None else empty), has_data))
            if not int(has_data):
                return
            yield np.asarray(x), np.asarray(y)


@dataclass
class TrainingArguments:
    per_device_train_batch_size: int = 8
    learning_rate: float = 0.3
    resume_global_step: int = 3


class Trainer:
    def __init__(self, args, train_dataset, tp_rank, tp_size):
        self.args, self.train_dataset = args, train_dataset
        self.tp_rank, self.tp_size = tp_rank, tp_size
        self.is_data_process = tp_rank == 0
        self.w = jnp.zeros((FEATURES, OUT // tp_size))
        self._grad = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.sum((x @ w - y) ** 2) / x.shape[0]))

    def get_train_dataloader(self):
        train_dataset = self.train_dataset if self.is_data_process else None
        is_iterable_dataset = isinstance(self.train_dataset, IterableDataset)
        return DistDataLoader(train_dataset, self.args.per_device_train_batch_size,
                              is_iterable_dataset=is_iterable_dataset)

    def train(self):
        loader = self.get_train_dataloader()
        steps_trained_in_current_epoch = self.args.resume_global_step
        it = iter(loader)
        if steps_trained_in_current_epoch > 0:
            if loader.batch_sampler is not None:
                loader.batch_sampler.start_batch = steps_trained_in_current_epoch
            else:
                for _ in range(steps_trained_in_current_epoch):
                    next(it)
        global_step, losses = self.args.resume_global_step, []
        cols = slice(self.tp_rank * (OUT // self.tp_size), (self.tp_rank + 1) * (OUT // self.tp_size))
        for x, y in it:
            local_loss, g = self._grad(self.w, x, y[:, cols])
            self.w = self.w - self.args.learning_rate * g
            loss = float(np.asarray(multihost_utils.process_allgather(np.asarray(local_loss))).sum())
            losses.append(loss)
            global_step += 1
        return global_step, losses


def main():
    rank, world = jax.process_index(), jax.process_count()
    trainer = Trainer(TrainingArguments(), StreamingJsonlDataset(), tp_rank=rank, tp_size=world)
    global_step, losses = trainer.train()
    w = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.w)))
    print("RESULT global_step", global_step)
    print("RESULT last_loss", round(losses[-1], 4))
    print("RESULT weights", np.round(np.concatenate(list(w), axis=1), 4).ravel().tolist())


if __name__ == "__main__":
    main()
