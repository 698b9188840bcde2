# Inference model reads its variable parameters from the config into a set: every process maps the
# sampler's position vector to parameter names in its own hash order
# Source: https://github.com/gwastro/pycbc/pull/3377 (port of the pycbc inference MPI ordering bug to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import configparser
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("walkers",))
CONFIG = """
[variable_params]
amp =
freq =
tau =
phase =
tc =
offset =

[static_params]
duration = 2.0
"""
TRUE = {"amp": 1.3, "freq": 6.0, "tau": 0.5, "phase": 0.4, "tc": 0.3, "offset": 0.1}
BOUNDS = {"amp": (0.5, 2.0), "freq": (4.0, 8.0), "tau": (0.2, 1.0), "phase": (0.0, 1.0),
          "tc": (0.1, 0.5), "offset": (-0.5, 0.5)}


def ringdown(t, p):
    dt = jnp.clip(t - p["tc"], 0.0, None)
    return p["offset"] + p["amp"] * jnp.exp(-dt / p["tau"]) * jnp.cos(2 * jnp.pi * p["freq"] * dt + p["phase"])


class GaussianNoiseModel:
    def __init__(self, cp, data, times):
        self.variable_params = list(set(cp.options("variable_params")))
        self.data, self.times = data, times

    @staticmethod
    def from_config(cp, data, times):
        return GaussianNoiseModel(cp, data, times)

    def loglikelihood(self, positions):
        params = {name: positions[:, i:i + 1] for i, name in enumerate(self.variable_params)}
        resid = self.data[None, :] - ringdown(self.times[None, :], params)
        return -0.5 * jnp.sum(resid ** 2, axis=1) / 0.05 ** 2


class EnsembleSampler:
    def __init__(self, model, ndim, nwalkers, seed=0):
        self.model, self.ndim, self.nwalkers = model, ndim, nwalkers
        self.rng = np.random.default_rng(seed)
        self._logl = jax.jit(model.loglikelihood)

    def evaluate(self, positions):
        per = self.nwalkers // jax.process_count()
        mine = positions[jax.process_index() * per:(jax.process_index() + 1) * per]
        arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("walkers")), mine)
        return np.array(multihost_utils.process_allgather(self._logl(arr), tiled=True))

    def run(self, start, niter, lows, highs):
        pos, logl = start.copy(), self.evaluate(start)
        for _ in range(niter):
            prop = np.clip(pos + 0.02 * (highs - lows) * self.rng.normal(size=pos.shape), lows, highs)
            new = self.evaluate(prop.astype(np.float32))
            accept = np.log(self.rng.uniform(size=self.nwalkers)) < new - logl
            pos[accept], logl[accept] = prop[accept], new[accept]
        return pos, logl


cp = configparser.ConfigParser()
cp.read_string(CONFIG)
times = jnp.linspace(0.0, float(cp["static_params"]["duration"]), 200)
data = ringdown(times, TRUE) + 0.05 * jax.random.normal(jax.random.key(1), times.shape)
model = GaussianNoiseModel.from_config(cp, data, times)
lows = np.array([BOUNDS[n][0] for n in model.variable_params], np.float32)
highs = np.array([BOUNDS[n][1] for n in model.variable_params], np.float32)
start = (lows + (highs - lows) * np.random.default_rng(7).uniform(size=(16, 6))).astype(np.float32)
sampler = EnsembleSampler(model, ndim=6, nwalkers=16, seed=3)
pos, logl = sampler.run(start, niter=40, lows=lows, highs=highs)
best = dict(zip(model.variable_params, pos[int(np.argmax(logl))].tolist()))
print("RESULT max logl", round(float(np.max(logl)), 2), flush=True)
print("RESULT map", {k: round(best[k], 3) for k in sorted(best)}, flush=True)
