# MMDetection-style epoch-based runner: data-parallel training configured like
# MMDistributedDataParallel(broadcast_buffers=False), a BatchNorm-style classifier, and an
# evaluation hook that scores the model on the validation set after every epoch with one
# jitted program over the global device mesh.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("data",))
REPLICATED = NamedSharding(MESH, P())


class BNClassifier:
    def __init__(self, dim=6, num_classes=3, momentum=0.1):
        rng = np.random.default_rng(0)
        self.params = {"w": rng.normal(size=(dim, num_classes)).astype(np.float32) * 0.1,
                       "b": np.zeros(num_classes, np.float32)}
        self.buffers = {"running_mean": np.zeros(dim, np.float32), "running_var": np.ones(dim, np.float32)}
        self.momentum = momentum

    @staticmethod
    def forward(params, buffers, x):
        xn = (x - buffers["running_mean"]) / jnp.sqrt(buffers["running_var"] + 1e-5)
        return xn @ params["w"] + params["b"]

    def update_bn(self, x):
        m = self.momentum
        self.buffers = {"running_mean": (1 - m) * self.buffers["running_mean"] + m * x.mean(0),
                        "running_var": (1 - m) * self.buffers["running_var"] + m * x.var(0)}


def xent(params, buffers, x, y):
    logp = jax.nn.log_softmax(BNClassifier.forward(params, buffers, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


grad_fn = jax.jit(jax.grad(xent))


@jax.jit
def eval_accuracy(params, buffers, x, y):
    pred = jnp.argmax(BNClassifier.forward(params, buffers, x), axis=-1)
    return jnp.mean((pred == y).astype(jnp.float32))


class DistEvalHook:
    def __init__(self, val_x, val_y):
        self.val_x, self.val_y = val_x, val_y
        self.history = []

    def after_train_epoch(self, model):
        put = lambda a: jax.make_array_from_process_local_data(REPLICATED, np.asarray(a))
        params = jax.tree_util.tree_map(put, model.params)
        buffers = jax.tree_util.tree_map(put, model.buffers)
        acc = eval_accuracy(params, buffers, put(self.val_x), put(self.val_y))
        self.history.append(round(float(np.asarray(acc.addressable_data(0))), 4))


def make_split(seed, n, shift):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n).astype(np.int32)
    x = rng.normal(size=(n, 6)).astype(np.float32) + shift
    x[np.arange(n), y] += 2.0
    return x, y


def train(max_epochs=3, batch_size=16, lr=0.5):
    rank = jax.process_index()
    x, y = make_split(100 + rank, 96, shift=1.5 * rank)
    val_x, val_y = make_split(7, 60, shift=0.75)
    model, hook = BNClassifier(), DistEvalHook(val_x, val_y)
    for epoch in range(max_epochs):
        for i in range(0, len(x), batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            model.update_bn(xb)
            grads = grad_fn(model.params, model.buffers, xb, yb)
            grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
                     for k, g in grads.items()}
            model.params = {k: model.params[k] - lr * grads[k] for k in model.params}
        hook.after_train_epoch(model)
    return model, hook


def main():
    model, hook = train()
    print("RESULT val_accuracy_per_epoch", hook.history)
    print("RESULT best_epoch", int(np.argmax(hook.history)) + 1)


if __name__ == "__main__":
    main()
