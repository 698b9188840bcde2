# Process 0 parses the resume metadata, broadcasts success or failure, and every process raises together
# Source: https://github.com/firedrakeproject/firedrake/pull/4972
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
RUN_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_resume_meta", os.environ.get("JOB_ID", "local"))
os.makedirs(RUN_DIR, exist_ok=True)
META = os.path.join(RUN_DIR, "resume.json")
if jax.process_index() == 0:
    with open(META, "w") as f:
        f.write('{"step": 4, "lr": 0.0')  # the previous job was killed half-way through writing this


class ResumeError(RuntimeError):
    pass


def read_resume_step(path):
    """Only process 0 touches the metadata file; the step is then broadcast to everyone."""
    step = np.array(-1, np.int32)  # -1: process 0 could not read it
    if jax.process_index() == 0:
        try:
            with open(path) as f:
                meta = json.load(f)
            step = np.array(int(meta["step"]), np.int32)
        except Exception as e:  # any failure on process 0 is broadcast, never raised alone
            print(f"cannot read {path}: {e}", flush=True)
    step = int(np.asarray(multihost_utils.broadcast_one_to_all(step)))
    if step < 0:
        raise ResumeError(f"cannot read {path} (reported by process 0)")
    return step


def train(start_step, num_steps=6):
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    w = jax.device_put(np.zeros((2,), np.float32), NamedSharding(mesh, P()))

    @jax.jit
    def step_fn(w, x, y):
        grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * grad

    for step in range(start_step, num_steps):
        rng = np.random.default_rng(10 * step + jax.process_index())
        x = rng.normal(size=(4, 2)).astype(np.float32)
        y = (x @ np.array([1.0, -2.0], np.float32)).astype(np.float32)
        xs = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), x)
        ys = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), y)
        w = step_fn(w, xs, ys)
    return np.asarray(w.addressable_data(0))


def main():
    try:
        start = read_resume_step(META)
    except ResumeError as e:
        print("could not resume, starting from scratch:", e, flush=True)
        start = 0
    w = train(start)
    print(f"RESULT start {start}")
    print("RESULT w", np.round(w, 4).tolist())


main()
