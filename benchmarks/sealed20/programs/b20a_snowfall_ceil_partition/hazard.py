# DDP-style acoustic model training: the cut set is partitioned over the processes by the sampler,
# each process batches its own partition, and every step runs one jitted update on a global batch
# that is sharded over all processes (one CPU device per process).
import os
from math import ceil

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CUTS = 101
FEAT_DIM = 20
NUM_CLASSES = 8
MAX_CUTS_PER_BATCH = 10
NUM_EPOCHS = 2

MESH = Mesh(np.array(jax.devices()), ("dp",))
BATCH = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())


def load_cuts():
    rng = np.random.default_rng(2021)
    feats = rng.normal(size=(NUM_CUTS, FEAT_DIM)).astype(np.float32)
    labels = (np.abs(feats[:, :NUM_CLASSES]).argmax(axis=1)).astype(np.int32)
    return feats, labels


class SingleCutSampler:
    def __init__(self, num_cuts, max_cuts, rank, world_size):
        self.num_cuts, self.max_cuts = num_cuts, max_cuts
        self.rank, self.world_size = rank, world_size

    def partition(self):
        total = self.num_cuts
        per_partition = int(ceil(total / float(self.world_size)))
        partition_start = self.rank * per_partition
        partition_end = min(partition_start + per_partition, total)
        return np.arange(partition_start, partition_end)

    def __iter__(self):
        indices = self.partition()
        for start in range(0, len(indices), self.max_cuts):
            yield indices[start:start + self.max_cuts]


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (FEAT_DIM, 32)) * 0.2, "w2": jax.random.normal(k2, (32, NUM_CLASSES)) * 0.2}


def compute_loss(params, feats, labels):
    logits = jnp.tanh(feats @ params["w1"]) @ params["w2"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


@jax.jit
def train_step(params, feats, labels):
    loss, grads = jax.value_and_grad(compute_loss)(params, feats, labels)
    return jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads), loss


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    feats, labels = load_cuts()
    sampler = SingleCutSampler(NUM_CUTS, MAX_CUTS_PER_BATCH, rank, world_size)
    params = jax.device_put(init_params(jax.random.PRNGKey(0)), REPLICATED)
    num_steps = 0
    for epoch in range(NUM_EPOCHS):
        for batch_idx, cut_ids in enumerate(sampler):
            gfeats = jax.make_array_from_process_local_data(BATCH, feats[cut_ids])
            glabels = jax.make_array_from_process_local_data(BATCH, labels[cut_ids])
            params, loss = train_step(params, gfeats, glabels)
            num_steps += 1
        if rank == 0:
            print(f"epoch {epoch}: batches={batch_idx + 1} loss={float(loss):.4f}")
    print("RESULT num_steps", num_steps)
    print("RESULT final_loss", round(float(loss), 4))
    print("RESULT w2_abs_sum", round(float(jnp.sum(jnp.abs(params["w2"]))), 4))


if __name__ == "__main__":
    main()
