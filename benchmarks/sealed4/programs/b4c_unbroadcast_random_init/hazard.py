# Gradients are averaged across workers, but the randomly initialized variables were never broadcast from rank 0
# Source: https://github.com/horovod/horovod/issues/672
# Written for the mcjax sealed4 evaluation (not copied): a port of a Horovod (TensorFlow MonitoredTrainingSession)
# user bug to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("workers",))
PER_WORKER = NamedSharding(MESH, P("workers"))


class hvd:
    @staticmethod
    def rank():
        return jax.process_index()

    @staticmethod
    def allreduce(x):
        stacked = jax.make_array_from_process_local_data(PER_WORKER, np.asarray(x)[None])
        return np.asarray(_average(stacked))

    class BroadcastGlobalVariablesHook:
        def __init__(self, root_rank):
            self.root_rank = root_rank

        def after_create_session(self, session):
            session.variables = {k: np.asarray(multihost_utils.broadcast_one_to_all(
                v, is_source=hvd.rank() == self.root_rank)) for k, v in session.variables.items()}

    class DistributedOptimizer:
        def __init__(self, lr):
            self.lr = lr

        def apply_gradients(self, variables, grads):
            return {k: variables[k] - self.lr * hvd.allreduce(grads[k]) for k in variables}


@jax.jit
def _average(x):
    return jnp.mean(x, axis=0)


def glorot_uniform(rng, shape):
    limit = np.sqrt(6.0 / sum(shape))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def build_model():
    rng = np.random.default_rng()  # the graph's initializers have no op-level seed
    return {"dense/kernel": glorot_uniform(rng, (6, 4)), "dense/bias": np.zeros((4,), np.float32),
            "logits/kernel": glorot_uniform(rng, (4, 1))}


@jax.jit
def compute_gradients(variables, x, y):
    def loss(v):
        h = jnp.tanh(x @ v["dense/kernel"] + v["dense/bias"])
        return jnp.mean((h @ v["logits/kernel"] - y) ** 2)
    return jax.grad(loss)(variables)


class MonitoredTrainingSession:
    def __init__(self, variables, hooks=()):
        self.variables = variables
        for hook in hooks:
            hook.after_create_session(self)


def input_fn(step):
    rng = np.random.default_rng(step * 10 + hvd.rank())
    x = rng.normal(size=(16, 6)).astype(np.float32)
    return x, np.sin(x[:, :1])


opt = hvd.DistributedOptimizer(lr=0.1)
hooks = []
sess = MonitoredTrainingSession(build_model(), hooks=hooks)
for step in range(20):
    grads = compute_gradients(sess.variables, *input_fn(step))
    sess.variables = opt.apply_gradients(sess.variables, {k: np.asarray(g) for k, g in grads.items()})
print("RESULT logits_kernel", np.round(sess.variables["logits/kernel"].ravel(), 4).tolist())
