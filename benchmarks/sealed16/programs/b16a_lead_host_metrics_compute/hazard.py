# Kauldron-style train loop: step metrics are written only on the lead host, and writing them computes the cross-process metric reduction
# Source: https://github.com/google-research/kauldron/commit/38fd07c7894e4aa454c6ff527a8f364cfcd5793e
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import dataclasses
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

LOG_EVERY = 2


@dataclasses.dataclass(frozen=True)
class AverageState:
    total: jax.Array  # per-example values, sharded over the data axis
    count: jax.Array

    def merge(self, other):
        return AverageState(jnp.concatenate([self.total, other.total]), jnp.concatenate([self.count, other.count]))

    def compute(self):
        return float(jnp.sum(self.total) / jnp.maximum(jnp.sum(self.count), 1.0))  # cross-process reduction


@dataclasses.dataclass
class AuxiliariesState:
    loss_states: dict

    def merge(self, other):
        if not self.loss_states:
            return other
        return AuxiliariesState({k: v.merge(other.loss_states[k]) for k, v in self.loss_states.items()})

    def compute(self):
        values = {k: s.compute() for k, s in sorted(self.loss_states.items())}
        values["total_loss"] = sum(values.values())
        return values


class JsonMetricWriter:
    def __init__(self, path):
        self.path = path

    def write_step_metrics(self, *, step, aux):
        values = aux.compute()
        if jax.process_index() != 0:
            return values
        with open(self.path, "a") as f:
            f.write(json.dumps({"step": step, **values}) + "\n")
        return values


@jax.jit
def train_step(w, x, y):
    def losses(w):
        pred = x @ w
        return (pred - y) ** 2, jnp.abs(w).sum() * 1e-3 * jnp.ones_like(y)
    (mse, l1), vjp = jax.vjp(losses, w)
    grad = vjp((jnp.ones_like(mse) / mse.shape[0], jnp.ones_like(l1) / l1.shape[0]))[0]
    aux = AuxiliariesState({"mse": AverageState(mse, jnp.ones_like(mse)), "l1": AverageState(l1, jnp.ones_like(l1))})
    return w - 0.05 * grad, aux


jax.tree_util.register_dataclass(AverageState, data_fields=["total", "count"], meta_fields=[])
jax.tree_util.register_dataclass(AuxiliariesState, data_fields=["loss_states"], meta_fields=[])


def main():
    rank = jax.process_index()
    out = os.path.join(tempfile.gettempdir(), "mcjax_sealed16_lead_host_metrics_compute", os.environ.get("JOB_ID", "0"))
    os.makedirs(out, exist_ok=True)
    writer = JsonMetricWriter(os.path.join(out, "metrics.jsonl"))
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.full((5,), 0.2, np.float32), NamedSharding(mesh, P()))
    data = np.random.default_rng(21 + rank)
    aux, logged = AuxiliariesState({}), None
    for step in range(1, 7):
        x = data.normal(size=(4, 5)).astype(np.float32)
        y = (x @ np.arange(5, dtype=np.float32) * 0.1).astype(np.float32)
        w, step_aux = train_step(w, jax.make_array_from_process_local_data(batch, x),
                                 jax.make_array_from_process_local_data(batch, y))
        aux = aux.merge(step_aux)
        log_any = step % LOG_EVERY == 0
        if log_any and rank == 0:
            logged = writer.write_step_metrics(step=step, aux=aux)
        if log_any:
            aux = AuxiliariesState({})
    print("RESULT final_w", np.round(np.asarray(w), 5).tolist())
    print("RESULT last_logged", {k: round(v, 5) for k, v in (logged or {}).items()})


if __name__ == "__main__":
    main()
