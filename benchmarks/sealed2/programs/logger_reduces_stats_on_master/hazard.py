# A file logger reduces sharded statistics to host values inside its master-process-only branch
# Source: https://github.com/netket/netket/pull/2272
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("samples",))
SAMPLES = NamedSharding(MESH, P("samples"))
REPL = NamedSharding(MESH, P())
LOG_PATH = os.path.join(tempfile.gettempdir(), f"mcjax_sealed2_log_{os.environ.get('JOB_ID', 'local')}.jsonl")


class Stats:
    def __init__(self, local_energies: jax.Array):
        self.local_energies = local_energies

    def to_dict(self) -> dict:
        e = self.local_energies
        return {"Mean": jnp.mean(e), "Variance": jnp.var(e), "Max": jnp.max(e)}


class JsonLog:
    def __init__(self, path: str):
        self._is_master_process = jax.process_index() == 0
        self._file = open(path, "a") if self._is_master_process else None

    def __call__(self, step: int, item: dict) -> None:
        if self._is_master_process:
            data = {"step": step}
            for key, value in item.items():
                if isinstance(value, Stats):
                    data[key] = {k: float(v) for k, v in value.to_dict().items()}
                else:
                    data[key] = float(value)
            self._file.write(json.dumps(data) + "\n")
            self._file.flush()


@jax.jit
def vmc_step(params, samples):
    energies = jnp.sum(jnp.sin(samples * params), axis=-1)
    grad = jnp.mean(jnp.cos(samples * params) * samples, axis=0)
    return params - 0.05 * grad, energies


logger = JsonLog(LOG_PATH)
params = jax.device_put(jnp.full((3,), 0.7), REPL)
rng = np.random.default_rng(jax.process_index())
for step in range(5):
    samples = jax.make_array_from_process_local_data(SAMPLES, rng.normal(size=(8, 3)).astype(np.float32))
    params, energies = vmc_step(params, samples)
    logger(step, {"Energy": Stats(energies), "acceptance": 0.5})

print("RESULT", [round(float(p), 4) for p in params])
