# Closed-loop planner evaluation: a rank failure is caught, the barrier reached and the failure shared (fixed)
# Source: https://github.com/tier4/Diffusion-Planner/pull/336 (port of the torch.distributed closed-loop bug to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = Path(tempfile.gettempdir()) / f"b6b_closed_loop_{os.environ.get('JOB_ID', 'local')}"
OUT_DIR.mkdir(parents=True, exist_ok=True)


class EvalFailed(RuntimeError):
    pass


def make_scenarios(n=8):
    rng = np.random.default_rng(7)
    scenarios = []
    for i in range(n):
        n_wp = 0 if i == 5 else 4
        scenarios.append({"id": i, "start": rng.uniform(-1, 1, 2).tolist(),
                          "route": rng.uniform(-10, 10, (n_wp, 2)).tolist()})
    return scenarios


@jax.jit
def simulate(start, goal):
    def step(state, _):
        pos, heading = state
        target = jnp.arctan2(goal[1] - pos[1], goal[0] - pos[0])
        heading = heading + 0.5 * jnp.sin(target - heading)
        pos = pos + 0.4 * jnp.stack([jnp.cos(heading), jnp.sin(heading)])
        return (pos, heading), jnp.linalg.norm(goal - pos)
    _, dist = jax.lax.scan(step, (start, 0.0), None, length=40)
    return dist[-1], jnp.min(dist)


def rollout(scenario):
    route = np.asarray(scenario["route"], np.float32).reshape(-1, 2)
    if route.shape[0] == 0:
        raise ValueError(f"scenario {scenario['id']}: route has no lanes to follow")
    final, closest = simulate(jnp.asarray(scenario["start"], jnp.float32), jnp.asarray(route[-1]))
    return {"id": scenario["id"], "final": round(float(final), 3), "closest": round(float(closest), 3)}


def run_job_loop(my_jobs):
    shard = OUT_DIR / f"shard_{jax.process_index()}.jsonl"
    error = None
    with shard.open("w") as f:
        for scenario in my_jobs:
            try:
                f.write(json.dumps(rollout(scenario)) + "\n")
            except Exception as e:  # keep going to the barrier; the failure is shared below
                error = e
                break
    return shard, error


def evaluate(scenarios):
    my_jobs = scenarios[jax.process_index()::jax.process_count()]
    _, error = run_job_loop(my_jobs)
    multihost_utils.sync_global_devices("closed_loop_shards_written")
    failed = multihost_utils.process_allgather(np.array([error is not None], np.int32))
    if np.any(failed):
        raise EvalFailed(f"{int(np.sum(failed))} rank(s) failed in the job loop")
    rows = []
    for p in range(jax.process_count()):
        rows += [json.loads(line) for line in (OUT_DIR / f"shard_{p}.jsonl").read_text().splitlines()]
    score = np.array([np.mean([r["closest"] < 2.0 for r in rows])], np.float32)
    return multihost_utils.process_allgather(score)


try:
    gathered = evaluate(make_scenarios())
    print("RESULT success_rate", [round(float(s), 3) for s in np.ravel(gathered)], flush=True)
except EvalFailed as e:
    print("RESULT eval failed:", e, flush=True)
