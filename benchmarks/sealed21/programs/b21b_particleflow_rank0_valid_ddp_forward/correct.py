# MLPF-style training driver: the model is wrapped for data-parallel training in the style of
# torch DistributedDataParallel (gradients averaged over all workers, buffers kept in step
# with rank 0). Validation runs on rank 0, then all ranks meet at a barrier before the next
# epoch.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class MLPF:
    def __init__(self, input_dim=8, num_classes=3, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {"w": jnp.asarray(rng.normal(size=(input_dim, num_classes)) * 0.1, jnp.float32),
                       "b": jnp.zeros(num_classes, jnp.float32)}
        self.running_mean = np.zeros(input_dim, np.float32)
        self.training = True

    @staticmethod
    def forward(params, x, mean):
        return (x - mean) @ params["w"] + params["b"]

    def __call__(self, x):
        if self.training:
            self.running_mean = 0.9 * self.running_mean + 0.1 * x.mean(0)
        return self.forward(self.params, x, self.running_mean)


class DistributedDataParallel:
    def __init__(self, module):
        self.module = module

    def __call__(self, x):
        self.module.running_mean = np.asarray(multihost_utils.broadcast_one_to_all(self.module.running_mean))
        return self.module(x)

    def allreduce_grads(self, grads):
        return jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)


def mlpf_loss(params, x, mean, y):
    logits = MLPF.forward(params, x, mean)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


loss_and_grad = jax.jit(jax.value_and_grad(mlpf_loss))


def make_loader(rank, split, num_batches, batch_size=16, input_dim=8):
    rng = np.random.default_rng({"train": 100, "valid": 200}[split] + rank)
    x = rng.normal(size=(num_batches, batch_size, input_dim)).astype(np.float32)
    y = (np.abs(x[..., :3]).argmax(-1)).astype(np.int32)
    return list(zip(x, y))


def train_epoch(ddp_model, loader, lr=0.3):
    total = 0.0
    for x, y in loader:
        ddp_model(x)
        module = ddp_model.module
        loss, grads = loss_and_grad(module.params, x, module.running_mean, y)
        grads = ddp_model.allreduce_grads(grads)
        module.params = jax.tree_util.tree_map(lambda p, g: p - lr * g, module.params, grads)
        total += float(loss)
    return total / len(loader)


def validate_epoch(ddp_model, loader):
    ddp_model.module.training = False
    correct = 0
    for x, y in loader:
        pred = np.asarray(ddp_model.module(x)).argmax(-1)
        correct += int((pred == y).sum())
    ddp_model.module.training = True
    return correct / sum(len(y) for _, y in loader)


def train_mlpf(rank, num_epochs=3):
    ddp_model = DistributedDataParallel(MLPF())
    train_loader = make_loader(rank, "train", num_batches=6)
    valid_loader = make_loader(0, "valid", num_batches=3)
    history = []
    for epoch in range(num_epochs):
        train_loss = train_epoch(ddp_model, train_loader)
        if rank == 0:
            acc = validate_epoch(ddp_model, valid_loader)
            print(f"epoch {epoch}: train_loss={train_loss:.4f} valid_acc={acc:.3f}")
            history.append(acc)
        multihost_utils.sync_global_devices(f"epoch {epoch} done")
    return ddp_model.module, history


def main():
    rank = jax.process_index()
    model, _ = train_mlpf(rank)
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params["w"])))
    print("RESULT weights", np.round(w[0], 4).ravel().tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
