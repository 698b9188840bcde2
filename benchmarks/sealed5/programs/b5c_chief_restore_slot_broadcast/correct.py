# Every worker restores the checkpoint, so every worker holds the same variables before the broadcast
# Source: https://github.com/horovod/horovod/issues/367
# Port to multi-process JAX of a Horovod hang in the initial variable broadcast after a restore.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import tempfile
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class MomentumOptimizer:
    def __init__(self, lr: float, momentum: float):
        self.lr, self.momentum = lr, momentum
        self.slots = {}  # created lazily, like TF slot variables

    def apply_gradients(self, params: dict, grads: dict) -> dict:
        out = {}
        for name in params:
            slot = self.slots.setdefault(f"{name}/Momentum", np.zeros_like(params[name]))
            slot = self.momentum * slot + grads[name]
            self.slots[f"{name}/Momentum"] = slot
            out[name] = params[name] - self.lr * slot
        return out


class Session:
    def __init__(self, params: dict, optimizer: MomentumOptimizer):
        self.params, self.optimizer = params, optimizer

    def global_variables(self) -> dict:
        return {**self.params, **self.optimizer.slots}

    def restore(self, path: str):
        ckpt = np.load(path)
        for name in ckpt.files:
            key = name.replace("__", "/")
            if "/Momentum" in key:
                self.optimizer.slots[key] = ckpt[name]
            else:
                self.params[key] = ckpt[name]

    def broadcast_global_variables(self, root_rank: int = 0):
        for name, value in sorted(self.global_variables().items()):
            synced = multihost_utils.broadcast_one_to_all(value, is_source=jax.process_index() == root_rank)
            if name in self.optimizer.slots:
                self.optimizer.slots[name] = np.asarray(synced)
            else:
                self.params[name] = np.asarray(synced)


@partial(jax.jit, out_shardings=REPL)
def compute_gradients(params, x):
    y = jnp.sum(x * jnp.array([2.0, -1.0]), axis=1)
    return jax.grad(lambda p: jnp.mean((jnp.sum(x * p["w"], axis=1) + p["b"] - y) ** 2))(params)


def previous_run_checkpoint(checkpoint_dir: str) -> str:
    path = os.path.join(checkpoint_dir, "model.ckpt-100.npz")
    np.savez(path, w=np.array([1.5, -0.5], np.float32), b=np.float32(0.2),
             w__Momentum=np.array([0.1, 0.1], np.float32), b__Momentum=np.float32(0.05))
    return checkpoint_dir


checkpoint_dir = previous_run_checkpoint(tempfile.mkdtemp(prefix="b5c_hvd_ckpt_"))
is_chief = jax.process_index() == 0
rng = np.random.default_rng(jax.process_index())  # fresh (unsynchronized) init before the broadcast
sess = Session({"w": rng.normal(size=2).astype(np.float32), "b": np.float32(0.0)},
               MomentumOptimizer(lr=0.05, momentum=0.9))
if checkpoint_dir and len(os.listdir(checkpoint_dir)) > 0:  # restore on every rank, not only the chief
    sess.restore(os.path.join(checkpoint_dir, sorted(os.listdir(checkpoint_dir))[-1]))
sess.broadcast_global_variables(root_rank=0)
for step in range(4):
    local = np.random.default_rng(10 * step + jax.process_index()).normal(size=(4, 2)).astype(np.float32)
    grads = compute_gradients(sess.params, jax.make_array_from_process_local_data(DATA, local))
    grads = {k: np.asarray(v.addressable_data(0)) for k, v in grads.items()}
    sess.params = sess.optimizer.apply_gradients({k: np.asarray(v) for k, v in sess.params.items()}, grads)
print("RESULT w", np.round(sess.params["w"], 4).tolist(), "b", round(float(sess.params["b"]), 4))
