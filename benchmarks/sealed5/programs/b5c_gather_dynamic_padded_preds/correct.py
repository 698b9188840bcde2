# Evaluation pads predictions and labels across processes before gathering them
# Source: https://github.com/huggingface/accelerate/issues/167
# Port to multi-process JAX of an HF Accelerate eval loop stuck in accelerator.gather.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAD_ID = -100


class Accelerator:
    @property
    def process_index(self) -> int:
        return jax.process_index()

    def gather(self, tensor: np.ndarray) -> np.ndarray:
        gathered = multihost_utils.process_allgather(tensor, tiled=True)
        return np.asarray(gathered)

    def pad_across_processes(self, tensor: np.ndarray, dim: int = 1, pad_index: int = 0) -> np.ndarray:
        sizes = multihost_utils.process_allgather(np.int32(tensor.shape[dim]))
        width = [(0, 0)] * tensor.ndim
        width[dim] = (0, int(sizes.max()) - tensor.shape[dim])
        return np.pad(tensor, width, constant_values=pad_index)


def collate_fn(features: list) -> dict:
    # pad to the longest sentence of this batch only
    longest = max(len(f["input_ids"]) for f in features)
    ids = np.full((len(features), longest), 0, np.int32)
    labels = np.full((len(features), longest), PAD_ID, np.int32)
    for i, f in enumerate(features):
        ids[i, :len(f["input_ids"])] = f["input_ids"]
        labels[i, :len(f["labels"])] = f["labels"]
    return {"input_ids": ids, "labels": labels}


class DataLoader:
    def __init__(self, dataset: list, batch_size: int, collate_fn):
        self.dataset, self.batch_size, self.collate_fn = dataset, batch_size, collate_fn

    def __iter__(self):
        for start in range(0, len(self.dataset), self.batch_size):
            yield self.collate_fn(self.dataset[start:start + self.batch_size])


@jax.jit
def token_classifier(input_ids):
    return (input_ids * 7 + 3) % 5


def make_shard(rank: int) -> list:
    rng = np.random.default_rng(200 + rank)
    out = []
    for _ in range(6):
        n = int(rng.integers(3, 10))
        ids = rng.integers(1, 50, size=n)
        out.append({"input_ids": ids, "labels": (ids * 7 + 3) % 5})
    return out


def evaluate(accelerator: Accelerator, loader: DataLoader) -> float:
    correct = total = 0
    for batch in loader:
        predictions = np.asarray(token_classifier(jnp.asarray(batch["input_ids"])))
        predictions = accelerator.pad_across_processes(predictions, dim=1, pad_index=PAD_ID)
        labels = accelerator.pad_across_processes(batch["labels"], dim=1, pad_index=PAD_ID)
        predictions = accelerator.gather(predictions)
        labels = accelerator.gather(labels)
        mask = labels != PAD_ID
        correct += int(np.sum((predictions == labels) & mask))
        total += int(np.sum(mask))
    return correct / total


accelerator = Accelerator()
loader = DataLoader(make_shard(accelerator.process_index), batch_size=3, collate_fn=collate_fn)
print("RESULT accuracy", round(evaluate(accelerator, loader), 4))
