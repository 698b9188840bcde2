import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def all_reduce_sum(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).sum(0)


def load_graph(num_nodes=480, num_features=16, num_classes=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, num_nodes)
    centers = rng.normal(size=(num_classes, num_features)) * 1.5
    x = (centers[y] + rng.normal(size=(num_nodes, num_features)) * 2.0).astype(np.float32)
    adj = (rng.random((num_nodes, num_nodes)) < 0.02) | (y[:, None] == y[None, :]) & (rng.random((num_nodes, num_nodes)) < 0.03)
    adj = adj | adj.T | np.eye(num_nodes, dtype=bool)
    adj = (adj / adj.sum(1, keepdims=True)).astype(np.float32)
    perm = rng.permutation(num_nodes)
    masks = {"train": perm[:240], "val": perm[240:360], "test": perm[360:]}
    return {"x": x, "y": y.astype(np.int32), "adj": adj, **masks}


class SAGE:
    def __init__(self, in_channels, hidden_channels, out_channels, seed=12345):
        k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(seed), 4)
        self.params = {
            "lin_l1": jax.random.normal(k1, (in_channels, hidden_channels)) * 0.1,
            "lin_r1": jax.random.normal(k2, (in_channels, hidden_channels)) * 0.1,
            "lin_l2": jax.random.normal(k3, (hidden_channels, out_channels)) * 0.1,
            "lin_r2": jax.random.normal(k4, (hidden_channels, out_channels)) * 0.1,
        }

    @staticmethod
    def apply(params, x, adj):
        h = jax.nn.relu(adj @ x @ params["lin_l1"] + x @ params["lin_r1"])
        return adj @ h @ params["lin_l2"] + h @ params["lin_r2"]


@jax.jit
def loss_fn(params, x, adj, y, idx):
    out = SAGE.apply(params, x, adj)[idx]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(out), y[idx][:, None], axis=1))


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


def test(idx, params, data):
    out = SAGE.apply(params, data["x"], data["adj"])[idx]
    pred = np.asarray(out.argmax(-1))
    total_correct = int((pred == data["y"][idx]).sum())
    total_examples = len(idx)
    return np.float32(total_correct / total_examples)


def run(rank, world_size, data, lr=0.5):
    train_idx = np.array_split(data["train"], world_size)[rank]
    val_idx = np.array_split(data["val"], world_size)[rank]
    test_idx = np.array_split(data["test"], world_size)[rank]

    model = SAGE(data["x"].shape[1], 32, int(data["y"].max()) + 1)
    history = []
    for epoch in range(1, 11):
        for batch in np.array_split(train_idx, 4):
            loss, grads = grad_fn(model.params, data["x"], data["adj"], data["y"], batch)
            grads = jax.tree_util.tree_map(lambda g: all_reduce_sum(g) / world_size, grads)
            model.params = jax.tree_util.tree_map(lambda p, g: p - lr * g, model.params, grads)
        if rank == 0:
            print(f"Epoch: {epoch:02d}, Loss: {float(loss):.4f}")

        if epoch % 5 == 0:
            train_acc = test(train_idx, model.params, data)
            val_acc = test(val_idx, model.params, data)
            test_acc = test(test_idx, model.params, data)

            if world_size > 1:
                train_acc = all_reduce_sum(train_acc) / world_size
                val_acc = all_reduce_sum(val_acc) / world_size
                test_acc = all_reduce_sum(test_acc) / world_size

            history.append((epoch, float(train_acc), float(val_acc), float(test_acc)))
            print(f"Train: {train_acc:.4f}, Val: {val_acc:.4f}, Test: {test_acc:.4f}")
    return model, history


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    data = load_graph()
    model, history = run(rank, world_size, data)
    best = max(history, key=lambda h: h[2])
    print("RESULT best_epoch", best[0])
    for epoch, train_acc, val_acc, test_acc in history:
        print(f"RESULT epoch {epoch} train {train_acc:.4f} val {val_acc:.4f} test {test_acc:.4f}")


if __name__ == "__main__":
    main()
