# PaddleFleetX-style GPT pretraining loop ported to JAX: a GPTBatchSampler hands every data-
# parallel rank its slice of each global batch of sample indices, the samples are read from the
# tokenized corpus, and a jitted data-parallel step trains a small language model over the mesh.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
VOCAB, SEQ, DIM = 32, 8, 16


class GPTDataset:
    def __init__(self, num_samples, seed=1234):
        rng = np.random.default_rng(seed)
        self.tokens = rng.integers(0, VOCAB, size=(num_samples, SEQ + 1)).astype(np.int32)

    def __getitem__(self, idx):
        sample = self.tokens[idx]
        return sample[:-1], sample[1:]

    def __len__(self):
        return len(self.tokens)


class GPTBatchSampler:
    def __init__(self, dataset, batch_size, num_replicas, rank, consumed_samples=0):
        self.dataset = dataset
        self.batch_size = batch_size
        self.nranks = num_replicas
        self.local_rank = rank
        self.consumed_samples = consumed_samples
        self.num_samples = int(math.ceil(len(self.dataset) * 1.0 / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def get_start_end_idx(self):
        start_idx = self.local_rank * self.batch_size
        return start_idx, start_idx + self.batch_size

    def __iter__(self):
        assert self.consumed_samples % self.nranks == 0
        self.batch_size_times_rank_size = self.batch_size * self.nranks
        num_samples = len(self.dataset)
        indices = np.arange(num_samples).tolist()
        indices += indices[:(self.total_size - len(indices))]
        assert len(indices) == self.total_size
        batch_indices = []
        for idx in range(self.consumed_samples, self.total_size):
            batch_indices.append(indices[idx])
            if len(batch_indices) == self.batch_size_times_rank_size:
                start_idx, end_idx = self.get_start_end_idx()
                yield batch_indices[start_idx:end_idx]
                batch_indices = []


@jax.jit
def train_step(params, tokens, labels, lr=0.5):
    def loss_fn(p):
        logits = p["emb"][tokens] @ p["out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], -1))
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree_util.tree_map(lambda a, g: a - lr * g, params, grads), loss


def collate(dataset, indices):
    samples = [dataset[i] for i in indices]
    tokens = np.stack([s[0] for s in samples])
    labels = np.stack([s[1] for s in samples])
    return (jax.make_array_from_process_local_data(DATA, tokens),
            jax.make_array_from_process_local_data(DATA, labels))


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    dataset = GPTDataset(num_samples=63)
    sampler = GPTBatchSampler(dataset, batch_size=4, num_replicas=nranks, rank=rank)
    rng = np.random.default_rng(0)
    init = {"emb": rng.normal(0, 0.1, (VOCAB, DIM)).astype(np.float32),
            "out": rng.normal(0, 0.1, (DIM, VOCAB)).astype(np.float32)}
    params = jax.tree_util.tree_map(
        lambda a: jax.make_array_from_callback(a.shape, REPL, lambda idx: a[idx]), init)
    losses = []
    for step, indices in enumerate(sampler):
        tokens, labels = collate(dataset, indices)
        params, loss = train_step(params, tokens, labels)
        losses.append(round(float(loss), 4))
    print("RESULT steps", len(losses))
    print("RESULT losses", losses)
    print("RESULT out_checksum", round(float(np.abs(np.asarray(params["out"].addressable_data(0))).sum()), 4))


if __name__ == "__main__":
    main()
