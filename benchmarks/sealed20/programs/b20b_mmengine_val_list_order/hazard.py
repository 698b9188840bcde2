# Distributed evaluation in the style of mmengine's ValLoop: the validation set is read from a
# manifest (which may list an image more than once), each rank scores the indices given to it by
# a non-shuffling DefaultSampler, the per-rank results are all-gathered and put back into dataset
# order (collect_results), and every rank computes accuracy and the hardest samples.
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CLASSES = 4
FEATURES = 6


def read_manifest():
    lines = []
    for cls in range(NUM_CLASSES):
        for i in range(8):
            lines.append(f"val/cls{cls}/img_{cls * 8 + i:04d}.jpg")
    lines += lines[::5]  # repeated entries from a merged annotation export
    return lines


class ValDataset:
    def __init__(self):
        self.data_list = list(set(read_manifest()))

    def __len__(self):
        return len(self.data_list)

    def __getitem__(self, idx):
        name = self.data_list[idx]
        label = int(name.split("/")[1][3:])
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        x = rng.normal(size=FEATURES).astype(np.float32)
        x[label] += 1.5
        return name, x, label


class DefaultSampler:
    def __init__(self, size, rank, world_size):
        self.indices = list(range(rank, size + (-size) % world_size, world_size))
        self.size = size

    def __iter__(self):
        return iter(i % self.size for i in self.indices)


@jax.jit
def predict(params, x):
    return jax.nn.softmax(x @ params["w"] + params["b"])


def collect_results(part, size):
    parts = np.asarray(multihost_utils.process_allgather(np.asarray(part)))
    ordered = [row for rows in zip(*parts) for row in rows]
    return np.stack(ordered[:size])


def main():
    rank, world = jax.process_index(), jax.process_count()
    k1, _ = jax.random.split(jax.random.PRNGKey(0))
    params = {"w": jnp.eye(FEATURES, NUM_CLASSES) + 0.3 * jax.random.normal(k1, (FEATURES, NUM_CLASSES)),
              "b": jnp.zeros(NUM_CLASSES)}
    dataset = ValDataset()
    part = []
    for idx in DefaultSampler(len(dataset), rank, world):
        _, x, _ = dataset[idx]
        part.append(np.asarray(predict(params, x)))
    probs = collect_results(np.stack(part), len(dataset))
    labels = np.array([dataset[i][2] for i in range(len(dataset))])
    acc = float(np.mean(probs.argmax(1) == labels))
    nll = -np.log(probs[np.arange(len(labels)), labels] + 1e-9)
    hardest = [dataset.data_list[i] for i in np.argsort(-nll)[:3]]
    print("RESULT num_samples", len(dataset))
    print("RESULT accuracy", round(acc, 4))
    print("RESULT hardest_samples", hardest)


if __name__ == "__main__":
    main()
