# baselines PPO2-style model setup (JAX port): rank 0 initializes the policy parameters and the
# other ranks receive them with sync_from_root; gradients are then averaged over ranks (MpiAdam).
# Source: https://github.com/openai/baselines/issues/727 (fixed in https://github.com/openai/baselines/pull/735)
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OB_DIM, AC_DIM = 4, 2


class Comm:
    def __init__(self):
        self.rank = jax.process_index()
        self.size = jax.process_count()
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("workers",))
        self._mean = jax.jit(lambda t: jax.tree.map(lambda x: jnp.mean(x, 0), t),
                             out_shardings=NamedSharding(self.mesh, P()))

    def allreduce_mean(self, tree):
        stacked = jax.tree.map(lambda x: jax.make_array_from_process_local_data(
            NamedSharding(self.mesh, P("workers")), np.asarray(x)[None]), tree)
        return jax.tree.map(np.asarray, self._mean(stacked))


def sync_from_root(params, comm):
    return multihost_utils.broadcast_one_to_all(params, is_source=comm.rank == 0)


def initialize(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"pi_w": np.asarray(jax.random.normal(k1, (OB_DIM, AC_DIM)) * 0.1),
            "vf_w": np.asarray(jax.random.normal(k2, (OB_DIM, 1)) * 0.1)}


def loss_fn(params, obs, adv, ret):
    logits = obs @ params["pi_w"]
    pg = -jnp.mean(jnp.sum(jax.nn.log_softmax(logits), -1) * adv)
    vf = jnp.mean((obs @ params["vf_w"])[:, 0] - ret) ** 2
    return pg + 0.5 * vf


class Model:
    def __init__(self, comm, seed=0, lr=3e-2):
        self.comm = comm
        self.lr = lr
        if comm is None or comm.rank == 0:
            # only rank 0 initializes; the others must receive rank 0's values
            self.params = initialize(seed + comm.rank)
        else:
            self.params = jax.tree.map(np.zeros_like, initialize(seed))
        if comm is not None:
            self.params = sync_from_root(self.params, comm)
        self._grad = jax.jit(jax.grad(loss_fn))

    def train(self, obs, adv, ret):
        grads = jax.tree.map(np.asarray, self._grad(self.params, obs, adv, ret))
        grads = self.comm.allreduce_mean(grads)               # MpiAdam-style averaging
        self.params = jax.tree.map(lambda p, g: p - self.lr * g, self.params, grads)


def runner_batch(rank, update):
    rng = np.random.default_rng(1000 * update + rank)
    obs = rng.normal(size=(32, OB_DIM)).astype(np.float32)
    return obs, rng.normal(size=32).astype(np.float32), rng.normal(size=32).astype(np.float32)


def main():
    comm = Comm()
    model = Model(comm, seed=0)
    for update in range(4):
        model.train(*runner_batch(comm.rank, update))
    for name, p in sorted(model.params.items()):
        print(f"RESULT {name} {np.round(np.asarray(p).ravel(), 5).tolist()}")


if __name__ == "__main__":
    main()
