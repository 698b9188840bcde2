# Training monitor: gather_and_aggregate returns early on a rank whose stage holds no monitored layer
# Source: https://github.com/bo-ke/llm-internal-medicine/pull/45
# Port to multi-controller JAX of the pipeline-stage hang fixed there; written for the mcjax sealed7 set.
import json
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
LOG_PATH = os.path.join(tempfile.gettempdir(), f"mcjax_sealed7_monitor_{os.environ.get('JOB_ID', 'local')}.jsonl")
LAYERS = ["layer_0", "layer_1", "layer_2", "empty_layer_add_0", "empty_layer_add_1", "lm_head"]


def all_gather_object(obj) -> list:
    payload = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = multihost_utils.process_allgather(np.array(payload.size, np.int32))
    buf = np.zeros((int(sizes.max()),), np.uint8)
    buf[:payload.size] = payload
    gathered = multihost_utils.process_allgather(buf)
    return [pickle.loads(gathered[i, :int(n)].tobytes()) for i, n in enumerate(sizes)]


class InternalMedicineMonitor:
    def __init__(self, stage_layers: list, gather_fn=all_gather_object):
        self.monitored = [n for n in stage_layers if n.startswith("layer_")]
        self._gather_fn = gather_fn

    def collect(self, activations: dict) -> dict:
        local = {n: np.asarray(activations[n].addressable_shards[0].data) for n in self.monitored}  # hook sees local acts
        return {name: float(np.sqrt(np.mean(a ** 2))) for name, a in local.items()}

    def gather_and_aggregate(self, local_metrics: dict) -> dict:
        if not local_metrics:
            return {}
        gathered = self._gather_fn(local_metrics)
        merged = {}
        for part in gathered:
            merged.update(part)
        if jax.process_index() == 0:
            with open(LOG_PATH, "a") as f:
                f.write(json.dumps(merged) + "\n")
        return merged


def forward(params, x):
    acts = {}
    h = x
    for name in LAYERS:
        h = jnp.tanh(h @ params[name])
        acts[name] = h
    return h, acts


@jax.jit
def train_step(params, x):
    loss, g = jax.value_and_grad(lambda p: jnp.mean(forward(p, x)[0] ** 2))(params)
    return jax.tree.map(lambda p, d: p - 0.05 * d, params, g), loss


rng = np.random.default_rng(0)
params = jax.device_put({n: jnp.asarray(rng.normal(size=(4, 4)).astype(np.float32) * 0.5) for n in LAYERS}, REPL)
per_stage = len(LAYERS) // jax.process_count()
stage_layers = LAYERS[jax.process_index() * per_stage:(jax.process_index() + 1) * per_stage]  # pipeline stage
monitor = InternalMedicineMonitor(stage_layers)
local_rng = np.random.default_rng(1 + jax.process_index())
report = {}
for step in range(6):
    x = jax.make_array_from_process_local_data(DATA, local_rng.normal(size=(2, 4)).astype(np.float32))
    params, loss = train_step(params, x)
    if step % 2 == 1:
        _, acts = jax.jit(forward)(params, x)
        report = monitor.gather_and_aggregate(monitor.collect(acts)) or report
print("RESULT", round(float(loss), 5), round(float(sum(jnp.sum(p) for p in jax.tree.leaves(params))), 4))
