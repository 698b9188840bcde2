# VMC driver with an MLflow-style logger: every process walks the log tree; only the MLflow write is master-gated
# Source: https://github.com/netket/netket/pull/2274
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_LOCAL, N_PARAMS, N_STEPS = 8, 4, 3


def materialise(value):
    """Host copy of a possibly sharded array: a collective when the array spans processes."""
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        return np.asarray(multihost_utils.process_allgather(value, tiled=True))
    return np.asarray(value)


class MLFlowLog:
    def __init__(self, path):
        self._is_master_process = jax.process_index() == 0
        self._path = path
        self._run = None

    def _init_mlflow(self):
        if self._run is None:
            self._run = {"metrics": []}

    def walk_tree_with_path(self, tree, prefix=""):
        out = []
        for key in sorted(tree):
            value = tree[key]
            name = f"{prefix}/{key}" if prefix else key
            if isinstance(value, dict):
                out.extend(self.walk_tree_with_path(value, name))
            else:
                out.append((name, materialise(value)))
        return out

    def __call__(self, step, log_data):
        walked = self.walk_tree_with_path(log_data)
        if not self._is_master_process:
            return
        self._init_mlflow()
        for name, arr in walked:
            self._run["metrics"].append({"key": name, "step": step, "value": float(np.mean(arr))})

    def flush(self):
        if self._is_master_process and self._run is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._path.write_text(json.dumps(self._run))


def local_energy(theta, s):
    return jnp.sum(jnp.cos(s * theta), axis=-1) - 0.5 * jnp.sum(s ** 2, axis=-1)


@jax.jit
def vmc_step(theta, samples):
    e_loc = local_energy(theta, samples)
    grad = jax.grad(lambda t: jnp.mean(local_energy(t, samples)))(theta)
    stats = {"Mean": jnp.mean(e_loc), "Variance": jnp.var(e_loc)}
    return theta - 0.1 * grad, stats, e_loc


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("samples",))
    sharding = NamedSharding(mesh, P("samples"))
    out = Path(tempfile.gettempdir()) / "mcjax_sealed17_mlflow_log_early_return" / os.environ.get("JOB_ID", "0")
    logger = MLFlowLog(out / "mlruns.json")
    rng = np.random.default_rng(3 + rank)
    theta = jnp.linspace(0.1, 0.4, N_PARAMS)
    for step in range(N_STEPS):
        local = rng.normal(size=(N_LOCAL, N_PARAMS)).astype(np.float32)
        samples = jax.make_array_from_process_local_data(sharding, local)
        theta, stats, e_loc = vmc_step(theta, samples)
        logger(step, {"Energy": stats, "local_energies": e_loc})
    logger.flush()
    print("RESULT energy", round(float(stats["Mean"]), 5))
    print("RESULT theta", np.round(np.asarray(theta), 5).tolist())


if __name__ == "__main__":
    main()
