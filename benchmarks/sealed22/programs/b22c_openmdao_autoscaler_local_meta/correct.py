# Aviary-style mission optimisation: two trajectory phases live in a ParallelGroup, one per
# process.  At driver setup an autoscaler reads every design variable (in driver units) to pick
# its scaling; the values of variables owned by another process are broadcast from their owner.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

UNIT_FACTORS = {("ft", "m"): 0.3048, ("m", "ft"): 1 / 0.3048, ("lbm", "kg"): 0.45359237, ("kg", "kg"): 1.0}


def convert_units(val, src, dst):
    return val * UNIT_FACTORS[(src, dst)] if src != dst else val


class MissionModel:
    """climb phase on process 0, cruise phase on process 1 (a ParallelGroup)."""

    PHASES = {"traj.climb": 0, "traj.cruise": 1}
    VARS = {"traj.climb.mass": ("lbm", 1), "traj.climb.throttle": (None, 1),
            "traj.cruise.altitude": ("ft", 1), "traj.cruise.mach": (None, 1)}

    def __init__(self):
        self.rank = jax.process_index()
        self._var_allprocs_abs2meta = {"output": {n: {"units": u, "size": s} for n, (u, s) in self.VARS.items()}}
        self._var_abs2meta = {"output": {n: m for n, m in self._var_allprocs_abs2meta["output"].items()
                                         if self.PHASES[n.rsplit(".", 1)[0]] == self.rank}}
        init = {"traj.climb.mass": 170000.0, "traj.climb.throttle": 0.9,
                "traj.cruise.altitude": 35000.0, "traj.cruise.mach": 0.78}
        self._outputs = {n: np.array([v]) for n, v in init.items() if n in self._var_abs2meta["output"]}

    def owner(self, name):
        return self.PHASES[name.rsplit(".", 1)[0]]

    def local_val(self, name):
        return self._outputs[name]

    @staticmethod
    @jax.jit
    def fuel_burn(mass, throttle, alt, mach):
        return 1e-4 * mass * throttle ** 2 + 1e3 * (mach - 0.8) ** 2 + 1e-3 * jnp.abs(alt - 10668.0)


class Driver:
    def __init__(self, model, desvars):
        self.model, self._designvars = model, desvars
        self.remote_vois = {n: model.owner(n) for n in desvars}

    def _get_voi_val(self, name, meta, driver_units=True):
        model, rank = self.model, jax.process_index()
        owner = self.remote_vois[name]
        size = model._var_allprocs_abs2meta["output"][name]["size"]
        val = model.local_val(name).copy() if owner == rank else np.zeros(size)
        # broadcast from the owning process
        val = np.asarray(multihost_utils.process_allgather(val))[owner]
        if driver_units and meta["units"] is not None:
            src_units = model._var_allprocs_abs2meta["output"][name]["units"]
            val = convert_units(val, src_units, meta["units"])
        return val

    def setup_autoscaler(self):
        for name, meta in self._designvars.items():
            val = self._get_voi_val(name, meta)
            meta["scaler"] = float(1.0 / max(np.abs(val).max(), 1e-8))

    def objective(self):
        vals = {n: self._get_voi_val(n, m) for n, m in self._designvars.items()}
        return float(MissionModel.fuel_burn(vals["traj.climb.mass"][0], vals["traj.climb.throttle"][0],
                                            vals["traj.cruise.altitude"][0], vals["traj.cruise.mach"][0]))


def main():
    model = MissionModel()
    desvars = {"traj.climb.mass": {"units": "kg"}, "traj.climb.throttle": {"units": None},
               "traj.cruise.altitude": {"units": "m"}, "traj.cruise.mach": {"units": None}}
    driver = Driver(model, desvars)
    driver.setup_autoscaler()
    fuel = driver.objective()
    print(f"rank {jax.process_index()}: owns {sorted(model._var_abs2meta['output'])}")
    print("RESULT scalers", {n: round(m["scaler"], 10) for n, m in desvars.items()})
    print("RESULT fuel_burn", round(fuel, 4))


if __name__ == "__main__":
    main()
