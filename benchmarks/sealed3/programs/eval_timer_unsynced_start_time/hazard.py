# Time-based eval and budget checks measured from each process's own start time
# Source: https://github.com/mlcommons/algorithmic-efficiency/pull/269
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPLICATED = NamedSharding(MESH, P())


class MnistLikeWorkload:
    eval_period_time_sec = 1.0
    max_allowed_runtime_sec = 2.6
    records_per_shard = (8, 2)  # this host's training shard is larger on host 0

    def _build_input_queue(self, rng: np.random.Generator):
        n = self.records_per_shard[jax.process_index()]
        shuffle_buffer = []
        for _ in range(n):  # fill the shuffle buffer from storage before the first step
            time.sleep(0.1)
            shuffle_buffer.append(rng.normal(size=(4, 5)).astype(np.float32))

        def batches():
            i = 0
            while True:
                time.sleep(0.2)  # per-step host input latency
                yield shuffle_buffer[i % len(shuffle_buffer)]
                i += 1
        return batches()

    def init_model_fn(self):
        return jax.device_put(np.full((5,), 0.1, np.float32), REPLICATED)

    def eval_model(self, params):
        x = jax.make_array_from_process_local_data(BATCH, np.ones((16, 5), np.float32))
        return float(_eval_loss(params, x))


@jax.jit
def _update(params, x):
    loss, g = jax.value_and_grad(lambda p: jnp.mean(jnp.tanh(x @ p) ** 2))(params)
    return params - 0.5 * g, loss


@jax.jit
def _eval_loss(params, x):
    return jnp.mean((x @ params) ** 2)


def train_once(workload):
    input_queue = workload._build_input_queue(np.random.default_rng(0))
    global_start_time = time.time()
    params = workload.init_model_fn()
    train_state = {"last_eval_time": global_start_time, "accumulated_submission_time": 0.0,
                   "is_time_remaining": True, "num_evals": 0}
    step = 0
    while train_state["is_time_remaining"]:
        x = jax.make_array_from_process_local_data(BATCH, next(input_queue))
        params, loss = _update(params, x)
        float(loss)
        current_time = time.time()
        train_state["accumulated_submission_time"] = current_time - global_start_time
        train_state["is_time_remaining"] = (
            train_state["accumulated_submission_time"] < workload.max_allowed_runtime_sec)
        if current_time - train_state["last_eval_time"] >= workload.eval_period_time_sec:
            workload.eval_model(params)
            train_state["num_evals"] += 1
            train_state["last_eval_time"] = current_time
        step += 1
    return params, step, train_state["num_evals"]


params, steps, evals = train_once(MnistLikeWorkload())
print("RESULT steps", steps, "evals", evals)
print("RESULT params", np.round(np.asarray(params.addressable_data(0)), 4).tolist())
