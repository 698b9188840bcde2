# Policy-training worker with an opt-in step profiler that installs schedule timers (L1 timers start with a barrier)
# Source: https://github.com/NovaSky-AI/SkyRL/pull/2181
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
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
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ProfilerConfig:
    enable: bool = True
    ranks: list = field(default_factory=lambda: [0])
    steps: list = field(default_factory=lambda: [2, 3])
    save_path: str = os.path.join(tempfile.gettempdir(), "policy_profile_traces")


class Profiler:
    def __init__(self, cfg, rank):
        self.cfg, self.rank, self.step = cfg, rank, 0

    def is_active_step(self):
        return self.cfg.enable and self.step in self.cfg.steps

    def check(self):
        return self.is_active_step() and self.rank in self.cfg.ranks

    def export(self, timings):
        os.makedirs(self.cfg.save_path, exist_ok=True)
        with open(os.path.join(self.cfg.save_path, f"rank{self.rank}_step{self.step}.json"), "w") as f:
            json.dump(timings, f)


class Timers:
    def __init__(self, log_level, log_option):
        self.log_level, self.log_option, self.elapsed, self._start = log_level, log_option, {}, {}

    def __call__(self, name, log_level=1):
        timers = self

        class _Timer:
            def start(self, barrier=False):
                if barrier:
                    multihost_utils.sync_global_devices(f"timer:{name}")
                timers._start[name] = time.perf_counter()

            def stop(self):
                timers.elapsed[name] = timers.elapsed.get(name, 0.0) + time.perf_counter() - timers._start.pop(name)
        return _Timer()


@dataclass
class ModelConfig:
    timers: object = None
    barrier_with_L1_time: bool = True


@contextmanager
def measure_schedule(model_config, timers):
    model_config.timers = timers
    try:
        yield timers
    finally:
        model_config.timers = None


class PolicyWorker:
    def __init__(self, mesh, profiler):
        self.mesh, self.profiler, self.model_config = mesh, profiler, ModelConfig()
        self.params = jax.make_array_from_process_local_data(
            NamedSharding(mesh, P()), np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4))
        self.batch_sharding = NamedSharding(mesh, P("dp"))
        self._step = jax.jit(self._loss_and_update)

    @staticmethod
    def _loss_and_update(w, obs, adv):
        def loss_fn(w):
            logp = jax.nn.log_softmax(obs @ w)
            return -jnp.mean(logp[:, 0] * adv)
        loss, g = jax.value_and_grad(loss_fn)(w)
        return w - 0.1 * g, loss

    def forward_backward(self, obs, adv):
        timers = self.model_config.timers
        if timers is not None:
            timers("forward-backward", log_level=1).start(barrier=self.model_config.barrier_with_L1_time)
        self.params, loss = self._step(self.params, obs, adv)
        loss = float(loss.addressable_shards[0].data)
        if timers is not None:
            timers("forward-backward").stop()
        return loss

    def train_step(self, step, local_obs, local_adv):
        self.profiler.step = step
        obs = jax.make_array_from_process_local_data(self.batch_sharding, local_obs)
        adv = jax.make_array_from_process_local_data(self.batch_sharding, local_adv)
        phase_context = nullcontext(None)
        if self.profiler is not None and self.profiler.is_active_step():
            phase_context = measure_schedule(self.model_config, Timers(log_level=2, log_option="all"))
        with phase_context as timers:
            loss = self.forward_backward(obs, adv)
        if timers is not None and self.profiler.check():
            self.profiler.export(timers.elapsed)
        return loss


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    worker = PolicyWorker(mesh, Profiler(ProfilerConfig(), rank))
    rng = np.random.default_rng(100 + rank)
    for step in range(5):
        loss = worker.train_step(step, rng.normal(size=(16, 8)).astype(np.float32),
                                 rng.normal(size=16).astype(np.float32))
        print("RESULT step", step, "loss", round(loss, 5))


if __name__ == "__main__":
    main()
