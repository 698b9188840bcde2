# I/O benchmark in the style of DLIO: rank 0 generates the training files, each process reads its
# shard of the file list through a tf.data-like pipeline, emulates compute per batch, checkpoints
# every few steps (collectively) and reduces the I/O statistics at the end.
import math
import os
import tempfile
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Args:
    num_files_train: int = 5
    num_samples_per_file: int = 4
    record_length: int = 64
    batch_size: int = 2
    epochs: int = 2
    steps_between_checkpoints: int = 3
    data_folder: str = os.path.join(tempfile.gettempdir(), f"dlio-{os.environ.get('JOB_ID', 'local')}")
    comm_size: int = 1
    my_rank: int = 0


class Dataset:
    """The small part of tf.data the reader uses: from files, shard, repeat, take, batch."""

    def __init__(self, make_iter):
        self._make_iter = make_iter

    def __iter__(self):
        return self._make_iter()

    @staticmethod
    def from_files(files):
        return Dataset(lambda: iter(files))

    def shard(self, n, i):
        return Dataset(lambda: (x for k, x in enumerate(self) if k % n == i))

    def flat_map(self, fn):
        return Dataset(lambda: (y for x in self for y in fn(x)))

    def batch(self, b):
        def gen():
            buf = []
            for x in self:
                buf.append(x)
                if len(buf) == b:
                    yield np.stack(buf)
                    buf = []
        return Dataset(gen)

    def repeat(self, count=None):
        def gen():
            k = 0
            while count is None or k < count:
                yield from self
                k += 1
        return Dataset(gen)

    def take(self, n):
        return Dataset(lambda: (x for _, x in zip(range(n), self)))


def generate_data(args):
    os.makedirs(args.data_folder, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(args.num_files_train):
        samples = rng.integers(0, 255, size=(args.num_samples_per_file, args.record_length), dtype=np.uint8)
        np.save(os.path.join(args.data_folder, f"img_{i}_of_{args.num_files_train}.npy"), samples)


class TFReader:
    def __init__(self, args, file_list):
        self._args, self._file_list = args, file_list

    def read_file(self, path):
        return list(np.load(path).astype(np.float32) / 255.0)

    def next(self):
        a = self._args
        dataset = Dataset.from_files(self._file_list).shard(a.comm_size, a.my_rank)
        dataset = dataset.flat_map(self.read_file).batch(a.batch_size)
        dataset = dataset.repeat()
        total = math.floor(len(self._file_list) / a.comm_size / a.batch_size * a.num_samples_per_file)
        return iter(dataset.take(total * a.epochs)), total


def checkpoint(state, step):
    multihost_utils.sync_global_devices(f"checkpoint step {step}")
    return float(state.sum())


def main():
    args = Args(comm_size=jax.process_count(), my_rank=jax.process_index())
    if args.my_rank == 0:
        generate_data(args)
    multihost_utils.sync_global_devices("data generated")
    files = sorted(os.path.join(args.data_folder, f) for f in os.listdir(args.data_folder))
    loader, steps_per_epoch = TFReader(args, files).next()

    state = np.zeros(args.record_length, dtype=np.float32)
    global_step, bytes_read, ckpts = 0, 0, []
    for epoch in range(1, args.epochs + 1):
        for step, batch in enumerate(loader, start=1):
            global_step += 1
            bytes_read += batch.size
            state = 0.9 * state + 0.1 * batch.mean(axis=0)
            if global_step % args.steps_between_checkpoints == 0:
                ckpts.append(round(checkpoint(state, global_step), 4))
            if step >= steps_per_epoch:
                break
        multihost_utils.sync_global_devices(f"end of epoch {epoch}")

    totals = np.asarray(multihost_utils.process_allgather(np.array([global_step, bytes_read], dtype=np.int32)))
    print("RESULT total_steps", int(totals[:, 0].sum()))
    print("RESULT total_samples", int(totals[:, 1].sum()) // args.record_length)
    print("RESULT checkpoints", len(ckpts))


if __name__ == "__main__":
    main()
