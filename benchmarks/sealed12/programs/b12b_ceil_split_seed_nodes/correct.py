# Multi-GPU GraphSAGE-style node classification: seed nodes dealt to processes by a padded strided sampler
# Source: https://github.com/dmlc/dgl/issues/2539
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_NODES, NUM_TRAIN, FEAT, CLASSES, BATCH, EPOCHS, LR = 64, 41, 8, 4, 10, 2, 0.5
MESH = Mesh(np.array(jax.devices()), ("data",))


def load_graph():
    rng = np.random.default_rng(7)  # the same graph on every process
    feats = rng.normal(size=(NUM_NODES, FEAT)).astype(np.float32)
    adj = (rng.random((NUM_NODES, NUM_NODES)) < 0.1).astype(np.float32)
    adj = adj / np.maximum(adj.sum(1, keepdims=True), 1.0)
    labels = rng.integers(0, CLASSES, size=NUM_NODES).astype(np.int32)
    return feats, adj @ feats, labels


def split_seed_nodes(train_nid, rank, world, epoch):
    """DistributedSampler-style: shuffle with a shared seed, pad to a multiple of world, take every world-th."""
    order = np.random.default_rng(100 + epoch).permutation(train_nid)
    per_rank = math.ceil(len(order) / world)
    order = np.concatenate([order, order[: per_rank * world - len(order)]])
    return order[rank::world]


def node_batches(nids, feats, neigh, labels):
    for s in range(0, len(nids), BATCH):
        ids = nids[s:s + BATCH]
        pad = BATCH - len(ids)
        x = np.concatenate([feats[ids], neigh[ids]], axis=1)
        x = np.pad(x, ((0, pad), (0, 0)))
        y = np.pad(labels[ids], (0, pad))
        w = np.pad(np.ones(len(ids), np.float32), (0, pad))
        yield x, y, w


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a)


@jax.jit
def train_step(params, x, y, w):
    def loss_fn(p):
        h = jax.nn.relu(x @ p["w1"])
        logp = jax.nn.log_softmax(h @ p["w2"])
        nll = -jnp.take_along_axis(logp, y[:, None], axis=1)[:, 0]
        return jnp.sum(nll * w) / jnp.maximum(jnp.sum(w), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - LR * b, params, g), loss


def main():
    feats, neigh, labels = load_graph()
    train_nid = np.arange(NUM_TRAIN)
    rng = np.random.default_rng(0)
    params = {"w1": jnp.asarray(rng.normal(0, 0.3, (2 * FEAT, 16)).astype(np.float32)),
              "w2": jnp.asarray(rng.normal(0, 0.3, (16, CLASSES)).astype(np.float32))}
    steps, loss = 0, None
    for epoch in range(EPOCHS):
        my_nids = split_seed_nodes(train_nid, jax.process_index(), jax.process_count(), epoch)
        for x, y, w in node_batches(my_nids, feats, neigh, labels):
            params, loss = train_step(params, shard(x), shard(y), shard(w))
            steps += 1
    print("RESULT steps", steps)
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT w2_sum", round(float(jnp.sum(params["w2"])), 4))


main()
