# Aerostructural wing optimisation with a case recorder.  Loads and displacements are distributed
# variables (each process holds a slice); at every driver iteration the recorder gathers the
# full value of every recorded variable and stores the case.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

# promoted name -> local size on each process (distributed variables are split over processes)
VARIABLES = {"aero.loads": 6, "aero.cl": 1, "struct.disp": 4, "struct.failure": 2,
             "wing.twist": 3, "perf.fuel_burn": 1, "wing.thickness": 5}


def check_path(name, includes, excludes):
    return any(name.startswith(i.rstrip("*")) for i in includes) and not any(
        name.startswith(e.rstrip("*")) for e in excludes)


class AeroStructModel:
    def __init__(self):
        self.rank = jax.process_index()
        rng = np.random.default_rng(100 + self.rank)
        self._outputs = {n: rng.normal(size=s).astype(np.float32) for n, s in VARIABLES.items()}
        self._var_allprocs_abs2prom = {"output": {n: n for n in VARIABLES}}

    def run_model(self, twist):
        self._outputs["wing.twist"] = np.asarray(twist, np.float32)
        loads = jnp.asarray(self._outputs["aero.loads"]) * (1.0 + 0.1 * jnp.mean(twist))
        self._outputs["aero.loads"] = np.asarray(loads)
        self._outputs["struct.disp"] = np.asarray(jnp.cumsum(loads[:4]) * 1e-2)
        self._outputs["perf.fuel_burn"] = np.asarray([jnp.sum(loads ** 2) * 1e-3], np.float32)

    def get_val(self, name, get_remote=True):
        local = self._outputs[name]
        if not get_remote:
            return local
        return np.asarray(multihost_utils.process_allgather(local, tiled=True))


class Driver:
    def __init__(self, model):
        self.model = model
        self._designvars = {"wing.twist": {}}
        self._objs = {"perf.fuel_burn": {}}
        self._cons = {"struct.failure": {}, "aero.cl": {}}
        self.recording_options = {"includes": ["aero.*", "struct.*"], "excludes": [],
                                  "record_outputs": True, "record_desvars": True,
                                  "record_objectives": True, "record_constraints": True}
        self._filtered_vars_to_record = self._get_vars_to_record(self.recording_options)
        self.cases = []

    def _get_vars_to_record(self, recording_options):
        incl, excl = recording_options["includes"], recording_options["excludes"]
        abs2prom = self.model._var_allprocs_abs2prom["output"]
        myoutputs = []
        if recording_options["record_outputs"]:
            myoutputs = sorted([n for n, prom in abs2prom.items() if check_path(prom, incl, excl)])
        myoutputs = set(myoutputs)
        if recording_options["record_desvars"]:
            myoutputs.update(self._designvars)
        if recording_options["record_objectives"]:
            myoutputs.update(self._objs)
        if recording_options["record_constraints"]:
            myoutputs.update(self._cons)
        return {"output": sorted(myoutputs)}

    def record_iteration(self):
        data = {n: self.model.get_val(n, get_remote=True) for n in self._filtered_vars_to_record["output"]}
        self.cases.append(data)

    def run(self, iters=3):
        twist = np.zeros(3, np.float32)
        for it in range(iters):
            self.model.run_model(twist)
            self.record_iteration()
            twist = twist - 0.1 * np.sign(self.cases[-1]["wing.twist"][:3] + 0.5)


def main():
    model = AeroStructModel()
    driver = Driver(model)
    driver.run()
    last = driver.cases[-1]
    print("RESULT recorded", sorted(last))
    print("RESULT case_sums", {n: round(float(np.sum(v)), 4) for n, v in sorted(last.items())})
    print("RESULT case_shapes", {n: list(np.shape(v)) for n, v in sorted(last.items())})


if __name__ == "__main__":
    main()
