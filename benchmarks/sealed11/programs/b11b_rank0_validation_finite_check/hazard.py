# An interatomic-potential trainer checks the validation summary for non-finite values, but only inside the rank-0 logging hook
# Source: https://github.com/NVIDIA/nvalchemi-toolkit/pull/109
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EPOCHS, STEPS, FRAMES, FEATS, LR = 6, 5, 8, 4, 0.6
WEIGHTS = {"energy": 1.0, "forces": 10.0}
MESH = jax.make_mesh((jax.device_count(),), ("data",))


def shard(x, spec=P("data")):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, spec), np.asarray(x, np.float32))


def frames(split, epoch, step):
    rng = np.random.default_rng([split, epoch, step, jax.process_index()])
    x = rng.normal(0.0, 3.0, (FRAMES, FEATS))
    return x, x @ np.linspace(0.5, 1.5, FEATS) + rng.normal(0.0, 0.1, FRAMES)


@jax.jit
def train_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)  # mean over every process's frames
    return w - LR * grad


@jax.jit
def validate(w, x, y):
    err = x @ w - y
    comps = {"energy": jnp.mean(err ** 2), "forces": jnp.mean((err[:, None] * w[None, :]) ** 2)}
    total = sum(WEIGHTS[k] * v for k, v in comps.items())
    return {"total_loss": total, "per_component_unweighted": comps}


class NonFiniteError(RuntimeError):
    pass


@dataclass
class Context:
    epoch: int
    global_rank: int
    validation: dict = None


class ValidationLogger:
    @staticmethod
    def _require_finite(values, ctx):
        bad = sorted(k for k, v in values.items() if not np.isfinite(v))
        if bad:
            raise NonFiniteError(f"epoch {ctx.epoch}: non-finite {bad}")

    def log_validation(self, ctx):
        if ctx.global_rank != 0 or ctx.validation is None:
            return
        summary = ctx.validation
        values = {"loss": float(summary["total_loss"])}
        values |= {k: float(v) for k, v in summary["per_component_unweighted"].items()}
        self._require_finite(values, ctx)
        print(f"epoch {ctx.epoch} validation loss {values['loss']:.4g}")


def main():
    w = shard(np.zeros(FEATS), P())
    logger, stopped, epoch = ValidationLogger(), "completed", 0
    for epoch in range(EPOCHS):
        for step in range(STEPS):
            x, y = frames(0, epoch, step)
            w = train_step(w, shard(x), shard(y))
        ctx = Context(epoch, jax.process_index())
        ctx.validation = validate(w, *map(shard, frames(1, epoch, 0)))
        try:
            logger.log_validation(ctx)
        except NonFiniteError as err:
            stopped = str(err)
            break
    print("RESULT stopped", stopped)
    print("RESULT last_epoch", epoch)


main()
