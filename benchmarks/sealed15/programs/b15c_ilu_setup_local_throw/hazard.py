# Implicit simulator: an ILU0 setup failure on one process is re-raised there at once, so only that process chops the time step
# Source: https://github.com/OPM/opm-simulators/pull/466
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"cells": 8, "dt0": 0.01, "t_end": 0.04, "newton_tol": 1e-10, "max_newton": 25, "pivot_tol": 1e-12,
       "co2_table_dt": 0.01}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_spec = NamedSharding(MESH, P("rank"))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))
_min = jax.jit(lambda x: jnp.min(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm(fn, values):
    return np.asarray(fn(jax.make_array_from_process_local_data(_spec, np.asarray(values, np.float64)[None, :])))


class MatrixBlockError(Exception):
    pass


def jacobian_blocks(state, dt):
    """2x2 (pressure, saturation) diagonal blocks; the CO2 cell has unreasonable table parameters."""
    blocks = [np.eye(2) + dt * np.array([[2.0 + c, 0.3], [0.1, 1.0 + 0.5 * c]]) for c in state["perm"]]
    if state["co2_cell"] is not None:
        blocks[state["co2_cell"]] = np.diag([1.0 - (dt / CFG["co2_table_dt"]) ** 4, 1.0 + dt])
    return blocks


def ilu0_setup(blocks):
    inv = []
    for i, b in enumerate(blocks):
        if abs(np.linalg.det(b)) < CFG["pivot_tol"]:
            raise MatrixBlockError(f"diagonal block {i} is not invertible")
        inv.append(np.linalg.inv(b))
    return inv


def construct_precond(blocks):
    ilu_setup_successful = 1.0
    try:
        precond = ilu0_setup(blocks)
    except MatrixBlockError:
        ilu_setup_successful, precond = 0.0, None
        raise
    if comm(_min, [ilu_setup_successful])[0] < 0.5:
        raise MatrixBlockError("ILU0 setup failed on some process")
    return precond


def newton_solve(state, x_old, dt):
    blocks = jacobian_blocks(state, dt)
    precond = construct_precond(blocks)
    x = x_old.copy()
    for it in range(CFG["max_newton"]):
        r = np.stack([b @ xi for b, xi in zip(blocks, x)]) + dt * 0.2 * x ** 3 - x_old - dt * state["src"]
        norm = float(np.sqrt(comm(_sum, [float(np.sum(r * r))])[0]))
        if norm < CFG["newton_tol"]:
            return x, it
        x = x - np.stack([m @ ri for m, ri in zip(precond, r)])
    raise RuntimeError("Newton did not converge")


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(21 + rank)
    state = {"perm": rng.uniform(0.0, 1.0, CFG["cells"]), "src": rng.uniform(0.0, 1.0, (CFG["cells"], 2)),
             "co2_cell": 3 if rank == 1 else None}
    x = np.ones((CFG["cells"], 2))
    t, dt, steps, chops, newton_its = 0.0, CFG["dt0"], 0, 0, 0
    while t < CFG["t_end"] - 1e-12:
        try:
            x_new, its = newton_solve(state, x, dt)
        except MatrixBlockError:
            dt, chops = dt * 0.5, chops + 1
            continue
        x, t, steps, newton_its = x_new, t + dt, steps + 1, newton_its + its
    total = comm(_sum, [float(np.sum(x)), float(steps)])
    print("RESULT steps", steps, "chops", chops, "newton_its", newton_its)
    print("RESULT solution_sum", round(float(total[0]), 8), "steps_sum", int(total[1]))


main()
