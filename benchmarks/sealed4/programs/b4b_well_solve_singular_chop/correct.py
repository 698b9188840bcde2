# Reservoir simulator: a singular local well system is caught where it happens and the failure flag is
# reduced across processes, so every process raises and chops the time step together.
# Source: https://github.com/OPM/opm-simulators/pull/5773
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("cells",))
CELLS = NamedSharding(MESH, P("cells"))
CELLS_PER_RANK = 6
END_TIME = 4.0


class NumericalProblem(RuntimeError):
    pass


class Well:
    def __init__(self, cell: int, max_rate: float):
        self.cell = cell
        self.max_rate = max_rate

    def equations(self, pressure: np.ndarray, dt: float):
        # rate-controlled producer; once dt * drawdown exceeds the limit the well switches to
        # a shut-in control whose Jacobian row vanishes
        drawdown = pressure[self.cell] - 1.0
        shut = dt * drawdown > self.max_rate
        jac = np.array([[0.0 if shut else 1.0, 0.0], [0.5, 1.0]])
        rhs = np.array([dt * drawdown, 0.0])
        return jac, rhs


class WellModel:
    def __init__(self):
        # this rank's part of the grid holds its own wells; rank 0 owns a tight-limit producer
        limit = 0.9 if jax.process_index() == 0 else 50.0
        self.wells = [Well(cell=2, max_rate=limit), Well(cell=4, max_rate=50.0)]

    def solve_well_equations(self, pressure: np.ndarray, dt: float) -> np.ndarray:
        source = np.zeros_like(pressure)
        failure = None
        for well in self.wells:
            jac, rhs = well.equations(pressure, dt)
            try:
                dx = np.linalg.solve(jac, rhs)
            except np.linalg.LinAlgError as err:
                failure = f"singular well system in cell {well.cell}: {err}"
                break
            source[well.cell] -= dx[0]
        failed_anywhere = np.any(multihost_utils.process_allgather(np.int32(failure is not None)))
        if failed_anywhere:
            raise NumericalProblem(failure or "well failure on another process")
        return source


@jax.jit
def residual_update(pressure, source, dt):
    new = pressure + dt * 0.1 * (jnp.roll(pressure, 1) + jnp.roll(pressure, -1) - 2 * pressure) + source
    return new, jnp.max(jnp.abs(new - pressure))     # global convergence measure


class Simulator:
    def __init__(self):
        self.well_model = WellModel()
        local = np.linspace(2.0, 3.0, CELLS_PER_RANK).astype(np.float32) + jax.process_index()
        self.pressure = local
        self.chops = 0
        self.reports = []

    def newton_step(self, dt: float) -> float:
        source = self.well_model.solve_well_equations(self.pressure, dt).astype(np.float32)
        p = jax.make_array_from_process_local_data(CELLS, self.pressure)
        s = jax.make_array_from_process_local_data(CELLS, source)
        new, change = residual_update(p, s, jnp.float32(dt))
        self.pressure = np.asarray(new.addressable_shards[0].data)
        return float(change)

    def run(self):
        t, dt = 0.0, 1.0
        while t < END_TIME - 1e-9:
            try:
                change = self.newton_step(dt)
            except NumericalProblem:
                self.chops += 1
                dt *= 0.5           # time-step chopping: retry the step with a smaller dt
                continue
            t += dt
            self.reports.append(round(change, 4))
            dt = min(1.0, 2 * dt)
        return self.reports


sim = Simulator()
reports = sim.run()
print("RESULT reports", reports)
print("RESULT chops", sim.chops)
