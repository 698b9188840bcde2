# Policy-training worker (SkyRL/Megatron style): forward-backward with optional schedule timers, torch-profiler-like tracing
# Source: https://github.com/NovaSky-AI/SkyRL/pull/2181
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import json
import os
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class _Timer:
    def __init__(self, name):
        self.name, self.elapsed, self._start = name, 0.0, None

    def start(self, barrier=False):
        if barrier:
            multihost_utils.sync_global_devices(f"timer:{self.name}")
        self._start = time.perf_counter()

    def stop(self):
        self.elapsed += time.perf_counter() - self._start


class Timers:
    def __init__(self, log_level=2, log_option="all"):
        self.log_level, self.log_option, self._timers = log_level, log_option, {}

    def __call__(self, name, log_level=1):
        return self._timers.setdefault(name, _Timer(name))

    def summary(self):
        return {k: round(t.elapsed, 6) for k, t in self._timers.items()}


@dataclass
class ModelConfig:
    barrier_with_L1_time: bool = True
    timers: object = None


@dataclass
class ProfilerConfig:
    ranks: list = field(default_factory=lambda: [0])
    steps: list = field(default_factory=lambda: [2, 3])
    out_dir: str = tempfile.gettempdir()


class Profiler:
    def __init__(self, cfg, rank):
        self.cfg, self.rank, self.step = cfg, rank, 0

    def check(self):
        return self.rank in self.cfg.ranks and self.step in self.cfg.steps

    def export(self, timers):
        path = os.path.join(self.cfg.out_dir, f"trace-{os.environ.get('JOB_ID', 'local')}-r{self.rank}-s{self.step}.json")
        with open(path, "w") as f:
            json.dump(timers.summary(), f)


@contextmanager
def measure_megatron_schedule(model_config, timers):
    model_config.timers = timers
    try:
        yield timers
    finally:
        model_config.timers = None


def policy_loss(params, obs, adv):
    logits = jnp.tanh(obs @ params["w"]) @ params["head"]
    return -jnp.mean(jax.nn.log_sigmoid(logits) * adv)


grad_fn = jax.jit(jax.value_and_grad(policy_loss))


def forward_backward(model_config, params, obs, adv):
    timers = model_config.timers
    if timers is not None:
        timers("forward-backward", log_level=1).start(barrier=model_config.barrier_with_L1_time)
    loss, grads = grad_fn(params, obs, adv)
    grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for k, g in grads.items()}
    if timers is not None:
        timers("forward-backward").stop()
    return float(loss), grads


def main():
    rank = jax.process_index()
    model_config = ModelConfig()
    profiler = Profiler(ProfilerConfig(), rank)
    k1, k2 = jax.random.split(jax.random.PRNGKey(11))
    params = {"w": 0.3 * jax.random.normal(k1, (8, 16)), "head": 0.3 * jax.random.normal(k2, (16,))}
    rng = np.random.default_rng(50 + rank)
    for step in range(6):
        profiler.step = step
        obs = rng.normal(size=(32, 8)).astype(np.float32)
        adv = rng.normal(size=(32,)).astype(np.float32)
        phase_context = nullcontext(None)
        if profiler is not None and profiler.check():
            phase_context = measure_megatron_schedule(model_config, Timers(log_level=2, log_option="all"))
        with phase_context as timers:
            loss, grads = forward_backward(model_config, params, obs, adv)
        if timers is not None and profiler.check():
            profiler.export(timers)
        params = {k: params[k] - 0.1 * grads[k] for k in params}
    checksum = float(sum(jnp.sum(jnp.abs(v)) for v in params.values()))
    print("RESULT train_steps", 6)
    print("RESULT params_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
