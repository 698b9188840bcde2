# Contrastive (NCE) training with negatives from every process: each process embeds its batch,
# the embeddings of all processes are all-gathered, and each process scores its queries against
# the whole global set of keys. Samples whose annotation file is missing are dropped by the
# collate function.
import os

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SAMPLES = 96
BATCH_SIZE = 8
FEAT_DIM = 12
EMB_DIM = 6
TEMPERATURE = 0.2
MISSING = {21, 50, 77}


class PoseDataset:
    def __init__(self, rank, world_size):
        rng = np.random.default_rng(4)
        self.images = rng.normal(size=(NUM_SAMPLES, FEAT_DIM)).astype(np.float32)
        self.poses = (self.images @ rng.normal(size=(FEAT_DIM, FEAT_DIM)) * 0.3).astype(np.float32)
        self.indices = np.arange(rank, NUM_SAMPLES, world_size)

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        idx = self.indices[i]
        if idx in MISSING:
            return None
        return self.images[idx], self.poses[idx]


def collate_fn(samples):
    samples = [s for s in samples if s is not None]
    images, poses = zip(*samples)
    return np.stack(images), np.stack(poses)


def data_loader(dataset):
    for start in range(0, len(dataset), BATCH_SIZE):
        yield collate_fn([dataset[i] for i in range(start, min(start + BATCH_SIZE, len(dataset)))])


def embed(params, x, which):
    z = jnp.tanh(x @ params[which])
    return z / jnp.linalg.norm(z, axis=1, keepdims=True)


def nce_loss(params, images, poses, all_keys, offset):
    q = embed(params, images, "wq")
    logits = q @ all_keys.T / TEMPERATURE
    targets = offset + jnp.arange(images.shape[0])
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), targets[:, None], axis=1))


def gather_keys(keys):
    sizes = np.asarray(multihost_utils.process_allgather(np.int32(keys.shape[0])))
    padded = np.zeros((int(sizes.max()), keys.shape[1]), dtype=np.float32)
    padded[:keys.shape[0]] = np.asarray(keys)
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    return [g[:n] for g, n in zip(gathered, sizes)]


def train_epoch(params, dataset, rank, lr=0.5):
    losses = []
    for images, poses in data_loader(dataset):
        gathered = gather_keys(embed(params, poses, "wk"))
        all_keys = jnp.asarray(np.concatenate(gathered))
        offset = sum(len(g) for g in gathered[:rank])
        loss, grads = jax.value_and_grad(nce_loss)(params, images, poses, all_keys, offset)
        flat, unravel = jax.flatten_util.ravel_pytree(grads)
        mean = np.asarray(multihost_utils.process_allgather(np.asarray(flat))).mean(axis=0)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, unravel(jnp.asarray(mean)))
        losses.append(float(loss))
    return params, losses


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    dataset = PoseDataset(rank, world_size)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"wq": jax.random.normal(k1, (FEAT_DIM, EMB_DIM)) * 0.3,
              "wk": jax.random.normal(k2, (FEAT_DIM, EMB_DIM)) * 0.3}
    for _ in range(2):
        params, losses = train_epoch(params, dataset, rank)
    mean_loss = np.asarray(multihost_utils.process_allgather(np.float32(np.mean(losses)))).mean()
    print("RESULT epoch_loss", round(float(mean_loss), 4))
    print("RESULT wq_abs_sum", round(float(jnp.sum(jnp.abs(params["wq"]))), 4))


if __name__ == "__main__":
    main()
