# A rocAL/RALI-style image pipeline feeding data-parallel training: a file source reader lists the
# image folder, keeps the files of its own shard (shard_id = rank, shard_count = world size),
# and the pipeline returns batches of decoded images until the shard is exhausted. Each training
# step all-reduces the gradients across the GPUs.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DATA_DIR = os.path.join(tempfile.gettempdir(), f"rali_{os.environ.get('JOB_ID', 'job')}", "train")


def write_dataset(num_images=10, size=4):
    if jax.process_index() == 0:
        os.makedirs(DATA_DIR, exist_ok=True)
        rng = np.random.default_rng(0)
        for i in range(num_images):
            label = i % 2
            img = rng.normal(loc=label, size=(size, size)).astype(np.float32)
            np.save(os.path.join(DATA_DIR, f"img_{i:04d}_label{label}.npy"), img)
    multihost_utils.sync_global_devices("dataset written")


class FileSourceReader:
    def __init__(self, folder, shard_id, shard_count, batch_count):
        self.folder, self.shard_id, self.shard_count = folder, shard_id, shard_count
        self._batch_count = batch_count
        self._file_names = []
        self._file_count_all_shards = 0

    def get_file_shard_id(self, file_id):
        return file_id % self.shard_count

    def replicate_last_batch_to_pad_partial_shard(self):
        if len(self._file_names) >= self._batch_count:
            self._file_names.extend(self._file_names[-self._batch_count:])

    def initialize(self):
        all_files = sorted(f for f in os.listdir(self.folder) if f.endswith(".npy"))
        for file_id, name in enumerate(all_files):
            if self.get_file_shard_id(file_id) == self.shard_id:
                self._file_names.append(name)
            self._file_count_all_shards += 1
        if self.shard_count > 1 and self._batch_count > 1:
            num_batches = len(self._file_names) // self._batch_count
            max_batches_per_shard = (self._file_count_all_shards + self.shard_count - 1) // self.shard_count
            max_batches_per_shard = (max_batches_per_shard + self._batch_count - 1) // self._batch_count
            if num_batches < max_batches_per_shard:
                self.replicate_last_batch_to_pad_partial_shard()
        return len(self._file_names)

    def read(self, idx):
        name = self._file_names[idx]
        return np.load(os.path.join(self.folder, name)).ravel(), int(name.split("label")[1][0])


class ImagePipeline:
    def __init__(self, reader, batch_size):
        self.reader, self.batch_size = reader, batch_size

    def build(self):
        self.size = self.reader.initialize()
        return self

    def __len__(self):
        return self.size // self.batch_size

    def __iter__(self):
        for b in range(len(self)):
            items = [self.reader.read(i) for i in range(b * self.batch_size, (b + 1) * self.batch_size)]
            yield np.stack([x for x, _ in items]), np.array([y for _, y in items], np.float32)


@jax.jit
def loss_and_grad(w, x, y):
    def loss(w):
        logits = x @ w
        return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
    return jax.value_and_grad(loss)(w)


def allreduce_mean(g):
    return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)


def main():
    rank, world = jax.process_index(), jax.process_count()
    write_dataset()
    pipe = ImagePipeline(FileSourceReader(DATA_DIR, shard_id=rank, shard_count=world, batch_count=2), batch_size=2).build()
    print(f"rank {rank}: shard size {pipe.size}, {len(pipe)} batches per epoch")
    w = np.zeros(16, np.float32)
    steps = 0
    for epoch in range(2):
        for x, y in pipe:
            loss, g = loss_and_grad(w, x, y)
            w = w - 0.1 * allreduce_mean(g)
            steps += 1
    weights = np.asarray(multihost_utils.process_allgather(w))
    print("RESULT steps", steps)
    print("RESULT w_head", np.round(weights[0][:4], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(weights, weights[0])))


if __name__ == "__main__":
    main()
