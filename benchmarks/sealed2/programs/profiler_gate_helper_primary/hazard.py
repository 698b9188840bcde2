# A profiling pass gated on a helper that is true only on process 0 runs the sharded pipeline there only
# Source: https://github.com/AI-Hypercomputer/maxdiffusion/pull/426
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(MESH, P("data"))
CONFIG = {"enable_profiler": True, "num_inference_steps": 3, "per_host_batch": 2, "latent_dim": 8}


def _jax_profiler_enabled(config) -> bool:
    return config["enable_profiler"] and jax.process_index() == 0


def profiler_enabled(config) -> bool:
    """Whether this process collects a profile (traces are written by the coordinator only)."""
    return _jax_profiler_enabled(config)


@jax.jit
def denoise_step(latents, t):
    noise_pred = jnp.tanh(latents) * (1.0 - t)
    return latents - 0.1 * noise_pred, jnp.mean(noise_pred ** 2)


def call_pipeline(config, seed: int) -> float:
    rng = np.random.default_rng(seed + jax.process_index())
    local = rng.normal(size=(config["per_host_batch"], config["latent_dim"])).astype(np.float32)
    latents = jax.make_array_from_process_local_data(BATCH, local)
    energy = None
    for i in range(config["num_inference_steps"]):
        latents, energy = denoise_step(latents, i / config["num_inference_steps"])
    return float(energy)


class Profiler:
    def __init__(self):
        self.t0 = None

    def start(self):
        self.t0 = time.perf_counter()

    def stop(self):
        print(f"profile captured: {time.perf_counter() - self.t0:.3f}s", flush=True)


def run(config) -> list[float]:
    original_enable_profiler = config["enable_profiler"]
    config["enable_profiler"] = False
    results = [call_pipeline(config, seed=0)]  # warm-up pass compiles everything
    config["enable_profiler"] = original_enable_profiler
    if profiler_enabled(config):
        profiler = Profiler()
        profiler.start()
        results.append(call_pipeline(config, seed=1))
        profiler.stop()
    results.append(call_pipeline(config, seed=2))
    return results


print("RESULT", [round(r, 4) for r in run(dict(CONFIG))])
