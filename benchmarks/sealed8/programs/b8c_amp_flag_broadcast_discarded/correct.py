# YOLO-style trainer (fixed): rank 0's check_amp result is broadcast and stored back into self.amp
# Source: https://github.com/ultralytics/ultralytics/issues/24798 (port of an Ultralytics
# torch.distributed bug to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from functools import partial
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
WORLD_SIZE = jax.process_count()
MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))


def check_amp(params) -> bool:
    """Run a reference forward in fp32 and in half precision; disable AMP on anomalies."""
    im = jnp.linspace(-3.0, 3.0, 64, dtype=jnp.float32).reshape(16, 4) * 37.0
    full = im @ params["w"]
    half = (im.astype(jnp.bfloat16) @ params["w"].astype(jnp.bfloat16)).astype(jnp.float32)
    ok = bool(jnp.allclose(full, half, atol=0.05))
    if not ok:
        print("AMP: checks failed, AMP will be disabled during training", flush=True)
    return ok


@partial(jax.jit, static_argnames="compute_dtype")
def train_step(params, x, y, compute_dtype):
    def loss_fn(p):
        pred = x.astype(compute_dtype) @ p["w"].astype(compute_dtype)
        return jnp.mean((pred - y.astype(compute_dtype)) ** 2)  # global mean over the sharded batch
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree_util.tree_map(lambda p, gi: p - 0.01 * gi.astype(p.dtype), params, g), loss


class BaseTrainer:
    def __init__(self, args):
        self.args = args
        rng = np.random.default_rng(0)
        self.params = {"w": jax.device_put(jnp.asarray(rng.normal(size=(4, 1)), jnp.float32),
                                           NamedSharding(MESH, P()))}

    def _setup_train(self):
        self.amp = bool(self.args.amp)
        if self.amp and RANK in {-1, 0}:  # single-GPU and DDP: the check runs on the main rank
            self.amp = check_amp(self.params)
        if RANK > -1 and WORLD_SIZE > 1:  # DDP: share rank 0's decision
            amp = multihost_utils.broadcast_one_to_all(np.int32(self.amp))
            self.amp = bool(amp)
        self.amp = bool(self.amp)
        self.compute_dtype = jnp.bfloat16 if self.amp else jnp.float32

    def _do_train(self, epochs: int):
        self._setup_train()
        rng = np.random.default_rng(10 + RANK)
        losses = []
        for _ in range(epochs):
            x = rng.normal(size=(8, 4)).astype(np.float32)
            y = x.sum(axis=1, keepdims=True)
            gx = multihost_utils.host_local_array_to_global_array(x, MESH, P("data"))
            gy = multihost_utils.host_local_array_to_global_array(y, MESH, P("data"))
            self.params, loss = train_step(self.params, gx, gy, compute_dtype=self.compute_dtype)
            losses.append(round(float(loss), 3))
        return losses


def main():
    trainer = BaseTrainer(SimpleNamespace(amp=True, epochs=3))
    losses = trainer._do_train(3)
    print(f"RESULT amp {trainer.amp}", flush=True)
    print(f"RESULT losses {losses}", flush=True)


if __name__ == "__main__":
    main()
