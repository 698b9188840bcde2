# Simplified planet-simulator dynamics loop: namelist read on the root task, gridpoint output through a gather (PlaSim style, ported to JAX)
# Source: https://github.com/alphaparrot/ExoPlaSim/pull/53
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NROOT = 0
NLAT, NLON = 8, 16

PLASIM_NL = """
&plasim_nl
 ntspd  = 8
 nrun   = 12
 nlowio = 0
 nstpw  = 4
/
"""

PLASIM_DEFAULTS = {"ntspd": 32, "nrun": 8, "nlowio": 1, "nstpw": 1}


def read_namelist(text):
    return {k.lower(): int(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", text)}


def prolog(mypid):
    cfg = dict(PLASIM_DEFAULTS)
    if mypid == NROOT:
        cfg.update(read_namelist(PLASIM_NL))
    shared = np.array([cfg["ntspd"], cfg["nrun"], cfg["nlowio"], cfg["nstpw"]], dtype=np.int32)
    shared = multihost_utils.broadcast_one_to_all(shared)
    cfg["ntspd"], cfg["nrun"], cfg["nlowio"], cfg["nstpw"] = (int(v) for v in shared)
    return cfg


@jax.jit
def gridpoint_step(t, lat, dt):
    forcing = 260.0 + 40.0 * jnp.cos(lat)[:, None]
    relax = (forcing - t) / 20.0
    diffusion = 0.1 * (jnp.roll(t, 1, axis=1) + jnp.roll(t, -1, axis=1) - 2.0 * t)
    return t + dt * (relax + diffusion)


def fixer(t_local):
    """Global energy fixer: remove the drift of the global mean temperature."""
    sums = np.asarray(multihost_utils.process_allgather(np.array([t_local.sum(), t_local.size], dtype=np.float64)))
    gmean = sums[:, 0].sum() / sums[:, 1].sum()
    return t_local - (gmean - 273.15) * 0.01


def mpgagp(t_local):
    return np.asarray(multihost_utils.process_allgather(np.asarray(t_local, dtype=np.float32))).reshape(NLAT, NLON)


def writegp(t_local, records):
    field = mpgagp(t_local)
    records.append(round(float(np.abs(field).sum()), 3))


def main():
    mypid, npro = jax.process_index(), jax.process_count()
    cfg = prolog(mypid)
    rows = NLAT // npro
    lat = np.linspace(-1.4, 1.4, NLAT)[mypid * rows:(mypid + 1) * rows]
    t = np.full((rows, NLON), 250.0, dtype=np.float32)
    dt = 1.0 / cfg["ntspd"]
    records, accum, naccum = [], np.zeros_like(t), 0
    for nstep in range(1, cfg["nrun"] + 1):
        t = np.asarray(gridpoint_step(t, lat, dt))
        t = fixer(t)
        if nstep % cfg["nstpw"] == 0:
            if cfg["nlowio"] == 0:
                writegp(t, records)
            else:
                accum += t
                naccum += 1
    if cfg["nlowio"] != 0 and naccum:
        writegp(accum / naccum, records)
    print("RESULT records", len(records))
    print("RESULT output_checksum", round(sum(records), 3))


if __name__ == "__main__":
    main()
