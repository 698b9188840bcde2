# Naive AMP optimizer over pipeline stages: the overflow status is all-reduced over the stages before anyone skips
# Source: https://github.com/hpcaitech/ColossalAI/pull/1175 (port of "different overflow status lead to communication stuck" to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("pp",))


class DynamicGradScaler:
    def __init__(self, initial_scale: float = 2.0 ** 16, backoff: float = 0.5):
        self.scale, self.backoff = initial_scale, backoff

    def update(self, found_inf: bool):
        if found_inf:
            self.scale *= self.backoff


class FP16Optimizer:
    """Keeps fp32 master weights for this pipeline stage; gradients arrive scaled, in fp16."""

    def __init__(self, master: np.ndarray, lr: float = 0.1, clip_grad_norm: float = 1.0):
        self.master, self.lr, self.max_norm = master, lr, clip_grad_norm
        self.grad_scaler = DynamicGradScaler()
        self._norm_fn = jax.jit(lambda sq: jnp.sqrt(jnp.sum(sq)), out_shardings=NamedSharding(MESH, P()))
        self._any_fn = jax.jit(lambda flags: jnp.max(flags) > 0, out_shardings=NamedSharding(MESH, P()))

    def _check_overflow(self, grads16: np.ndarray) -> bool:
        local = np.array([0.0 if np.isfinite(grads16).all() else 1.0], np.float32)
        flags = jax.make_array_from_process_local_data(NamedSharding(MESH, P("pp")), local)
        return bool(self._any_fn(flags))

    def _global_grad_norm(self, grads: np.ndarray) -> float:
        sq = np.array([np.sum(np.nan_to_num(grads, posinf=0.0, neginf=0.0) ** 2)], np.float32)
        sq_all = jax.make_array_from_process_local_data(NamedSharding(MESH, P("pp")), sq)
        return float(self._norm_fn(sq_all))

    def step(self, grads16: np.ndarray):
        found_inf = self._check_overflow(grads16)
        grads = grads16.astype(np.float32) / self.grad_scaler.scale
        self.grad_scaler.update(found_inf)
        if found_inf:
            return False, None
        grad_norm = self._global_grad_norm(grads)
        grads *= min(1.0, self.max_norm / (grad_norm + 1e-6))
        self.master -= self.lr * grads
        return True, grad_norm


class PipelineStage:
    def __init__(self, stage: int):
        self.stage = stage
        self.weights = np.full((4,), 0.5, np.float32)

    def backward(self, batch: np.ndarray, loss_scale: float) -> np.ndarray:
        # the last stage sits next to the loss: its gradients are larger and overflow first in fp16
        upstream = batch * (3.0 if self.stage == 1 else 1e-3)
        return (upstream * self.weights * loss_scale).astype(np.float16)


def main():
    stage = PipelineStage(jax.process_index())
    opt = FP16Optimizer(stage.weights.copy())
    batches = [np.full((4,), v, np.float32) for v in (1e-4, 2e-4, 2.0, 1e-4)]
    log = []
    for step, batch in enumerate(batches):
        ok, norm = opt.step(stage.backward(batch, opt.grad_scaler.scale))
        log.append((step, ok, None if norm is None else round(norm, 5)))
    weights = multihost_utils.process_allgather(opt.master)
    print("RESULT log", log)
    print("RESULT weights", np.round(np.asarray(weights), 5).ravel().tolist())


if __name__ == "__main__":
    main()
