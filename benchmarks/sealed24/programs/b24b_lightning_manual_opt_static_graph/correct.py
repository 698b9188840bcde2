import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def all_reduce_mean(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out = [np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(0) for x in leaves]
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in out])


class Reducer:
    def __init__(self, static_graph):
        self.static_graph = static_graph
        self.num_iterations = 0
        self._delayed_grads = None

    def prepare_for_backward(self):
        self.num_iterations += 1

    def autograd_hook(self, grads):
        if self.static_graph and self.num_iterations == 1:
            self._delayed_grads = grads
            return grads
        return all_reduce_mean(grads)

    def _delay_all_reduce(self):
        grads, self._delayed_grads = all_reduce_mean(self._delayed_grads), None
        return grads


class DistributedDataParallel:
    def __init__(self, module, static_graph=False):
        self.module = module
        self.static_graph = static_graph
        self.reducer = Reducer(static_graph)


class DDPStrategy:
    def __init__(self, static_graph=False):
        self.static_graph = static_graph
        self.model = None
        self._pl_static_graph_delay_done = False

    def setup(self, module):
        params = multihost_utils.broadcast_one_to_all(module.params)
        module.params = jax.tree_util.tree_map(jnp.asarray, params)
        self.model = DistributedDataParallel(module, static_graph=self.static_graph)

    @property
    def lightning_module(self):
        return self.model.module

    def backward(self, batch):
        lm = self.lightning_module
        self.model.reducer.prepare_for_backward()
        loss, grads = lm.loss_and_grad(lm.params, batch)
        lm.grads = self.model.reducer.autograd_hook(grads)
        self.post_backward(loss)
        return loss

    def post_backward(self, closure_loss):
        model = self.model
        lm = self.lightning_module
        if lm is None or lm.automatic_optimization:
            return
        if not model.static_graph:
            return
        if self._pl_static_graph_delay_done:
            return
        lm.grads = model.reducer._delay_all_reduce()
        self._pl_static_graph_delay_done = True


class SGD:
    def __init__(self, module, lr):
        self.module, self.lr = module, lr

    def zero_grad(self):
        self.module.grads = None

    def step(self):
        m = self.module
        m.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, m.params, m.grads)


class BoringModel:
    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.params = {"weight": jnp.asarray(rng.normal(size=(32, 2)).astype(np.float32)),
                       "bias": jnp.zeros(2)}
        self.grads = None
        self.automatic_optimization = False
        self.loss_and_grad = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(params, batch):
        out = batch @ params["weight"] + params["bias"]
        return jnp.mean((out - jnp.ones_like(out)) ** 2)

    def configure_optimizers(self):
        return SGD(self, lr=0.1)

    def training_step(self, opt, batch, batch_idx):
        opt.zero_grad()
        loss = self.trainer.strategy.backward(batch)
        opt.step()
        return loss


class Trainer:
    def __init__(self, strategy, max_steps):
        self.strategy, self.max_steps = strategy, max_steps

    def fit(self, model, dataloader):
        model.trainer = self
        self.strategy.setup(model)
        opt = model.configure_optimizers()
        for batch_idx, batch in enumerate(dataloader):
            if batch_idx >= self.max_steps:
                break
            model.training_step(opt, batch, batch_idx)


def random_dataloader(rank, size=32, length=4, batch_size=2):
    rng = np.random.default_rng(42 + rank)
    data = rng.normal(size=(length * batch_size, size)).astype(np.float32)
    return [data[i:i + batch_size] for i in range(0, len(data), batch_size)]


def main():
    rank = jax.process_index()
    model = BoringModel(seed=rank)
    trainer = Trainer(DDPStrategy(static_graph=True), max_steps=3)
    trainer.fit(model, random_dataloader(rank))
    print("RESULT bias", np.round(np.asarray(model.params["bias"]), 5).tolist())
    print("RESULT weight_sum", round(float(model.params["weight"].sum()), 4))


if __name__ == "__main__":
    main()
