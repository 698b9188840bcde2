# ParlAI-style multi-process training: every worker builds its own copy of the agent's model,
# trains on its shard of the task, and gradients are averaged across workers each update.
# Rank 0 (the primary worker) runs validation and reports the metrics.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DEFAULT_OPT = {"embedding_size": 8, "hidden_size": 16, "n_classes": 4, "lr": 0.3,
               "num_epochs": 3, "batchsize": 16, "seed": None}


def is_primary_worker():
    return jax.process_index() == 0


def all_reduce_mean(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out = [np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(0) for x in leaves]
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in out])


def sync_parameters(agent):
    """Make every worker use the primary worker's copy of the parameters."""
    leaves, treedef = jax.tree_util.tree_flatten(agent.model)
    if not is_primary_worker():
        leaves = [jnp.zeros_like(p) for p in leaves]
    summed = [np.asarray(multihost_utils.process_allgather(np.asarray(p))).sum(0) for p in leaves]
    agent.model = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(p) for p in summed])
    norm2 = sum(float(np.sum(p ** 2)) for p in summed)
    norm2 = np.float32(norm2)
    all_versions = np.asarray(multihost_utils.process_allgather(norm2))
    if not np.all(all_versions == norm2):
        raise AssertionError(f"Some models parameters were out of sync: {all_versions}")
    return True


class ClassifierAgent:
    def __init__(self, opt):
        self.opt = opt
        seed = opt["seed"] if opt["seed"] is not None else int.from_bytes(os.urandom(4), "little")
        self.model = self.build_model(jax.random.PRNGKey(seed))
        self._grad_fn = jax.jit(jax.value_and_grad(self._loss))

    def build_model(self, key):
        k1, k2 = jax.random.split(key)
        e, h, c = self.opt["embedding_size"], self.opt["hidden_size"], self.opt["n_classes"]
        return {"w1": jax.random.normal(k1, (e, h)) / np.sqrt(e), "b1": jnp.zeros(h),
                "w2": jax.random.normal(k2, (h, c)) / np.sqrt(h), "b2": jnp.zeros(c)}

    @staticmethod
    def _loss(params, x, y):
        hid = jnp.tanh(x @ params["w1"] + params["b1"])
        logits = hid @ params["w2"] + params["b2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def train_step(self, batch):
        loss, grads = self._grad_fn(self.model, *batch)
        grads = all_reduce_mean(grads)
        self.model = jax.tree_util.tree_map(lambda p, g: p - self.opt["lr"] * g, self.model, grads)
        return float(loss)


class TaskTeacher:
    def __init__(self, opt, rank, world_size, n_examples=256):
        rng = np.random.default_rng(2019)
        x = rng.normal(size=(n_examples, opt["embedding_size"])).astype(np.float32)
        y = (np.abs(x[:, :4]).argmax(1)).astype(np.int32)
        self.x, self.y = x[rank::world_size], y[rank::world_size]
        self.bs = opt["batchsize"]

    def batches(self):
        for i in range(0, len(self.x), self.bs):
            yield self.x[i:i + self.bs], self.y[i:i + self.bs]


class TrainLoop:
    def __init__(self, opt):
        self.opt = opt
        self.agent = ClassifierAgent(opt)
        self.teacher = TaskTeacher(opt, jax.process_index(), jax.process_count())
        sync_parameters(self.agent)

    def validate(self):
        x, y = self.teacher.x, self.teacher.y
        return float(self.agent._loss(self.agent.model, x, y))

    def train(self):
        for epoch in range(self.opt["num_epochs"]):
            losses = [self.agent.train_step(b) for b in self.teacher.batches()]
            if is_primary_worker():
                print(f"epoch {epoch}: train loss {np.mean(losses):.4f} valid loss {self.validate():.4f}")
        return self.agent.model


def main():
    opt = dict(DEFAULT_OPT)
    model = TrainLoop(opt).train()
    norm2 = sum(float(jnp.sum(p ** 2)) for p in jax.tree_util.tree_leaves(model))
    print("RESULT param_norm2", round(norm2, 4))
    print("RESULT w2_row0", np.round(np.asarray(model["w2"][0]), 4).tolist())


if __name__ == "__main__":
    main()
