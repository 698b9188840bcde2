# A small MDAO driver (Sellar-like problem split over a parallel group) with a driver scaling
# report.  Each process owns one discipline's outputs; the driver gathers design variables,
# objective and constraints from their owning processes when it needs them.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ParallelModel:
    """Two disciplines in a ParallelGroup: process p owns discipline p's variables."""

    OWNER = {"x": 0, "y1": 0, "con1": 0, "z": 1, "y2": 1, "con2": 1, "obj": 0}

    def __init__(self):
        self.rank = jax.process_index()
        self.outputs = {"x": np.array([1.0]), "z": np.array([5.0, 2.0]),
                        "y1": np.zeros(1), "y2": np.zeros(1), "con1": np.zeros(1),
                        "con2": np.zeros(1), "obj": np.zeros(1)}

    def run_model(self):
        x, z = self.outputs["x"], self.outputs["z"]
        y1, y2 = np.ones(1), np.ones(1)
        for _ in range(10):
            y1 = z[0] ** 2 + z[1] + x - 0.2 * y2
            y2 = np.sqrt(np.abs(y1)) + z[0] + z[1]
        self.outputs.update(y1=y1, y2=y2, con1=3.16 - y1, con2=y2 - 24.0,
                            obj=x ** 2 + z[1] + y1 + np.exp(-y2))

    def get_val(self, name, get_remote=False):
        val = self.outputs[name] if self.OWNER[name] == self.rank else np.zeros_like(self.outputs[name])
        if not get_remote:
            return val
        # the owning process contributes the value, the others zeros
        return np.asarray(multihost_utils.process_allgather(val)).sum(0)


class Driver:
    def __init__(self, model):
        self.model = model
        self._designvars = {"x": {"scaler": 1.0, "lower": 0.0, "upper": 10.0},
                            "z": {"scaler": 0.1, "lower": 0.0, "upper": 10.0}}
        self._cons = {"con1": {"scaler": 1.0}, "con2": {"scaler": 0.01}}
        self._objs = {"obj": {"scaler": 0.5}}

    def get_design_var_values(self, get_remote=True):
        return {n: self.model.get_val(n, get_remote) * m["scaler"] for n, m in self._designvars.items()}

    def get_constraint_values(self):
        return {n: self.model.get_val(n, True) * m["scaler"] for n, m in self._cons.items()}

    def get_objective_values(self):
        return {n: self.model.get_val(n, True) * m["scaler"] for n, m in self._objs.items()}

    def run(self, iters=5, lr=0.05):
        for _ in range(iters):
            self.model.run_model()
            grad_x = 2 * self.get_design_var_values()["x"]
            self.model.outputs["x"] = np.clip(self.model.outputs["x"] - lr * grad_x, 0.0, 10.0)

    def scaling_report(self, outfile):
        return view_driver_scaling(self, outfile)


def _write_report(data, outfile):
    if jax.process_index() == 0:
        with open(outfile, "w") as f:
            json.dump(data, f)


def view_driver_scaling(driver, outfile):
    if jax.process_count() > 1 and jax.process_index() != 0:
        return
    dv_vals = driver.get_design_var_values(get_remote=True)
    obj_vals = driver.get_objective_values()
    con_vals = driver.get_constraint_values()
    data = {"design_vars": [{"name": n, "driver_val": v.tolist(), "scaler": driver._designvars[n]["scaler"]}
                            for n, v in dv_vals.items()],
            "objective": [{"name": n, "driver_val": v.tolist()} for n, v in obj_vals.items()],
            "constraints": [{"name": n, "driver_val": v.tolist()} for n, v in con_vals.items()]}
    _write_report(data, outfile)
    return data


def main():
    model = ParallelModel()
    driver = Driver(model)
    driver.run()
    outdir = tempfile.mkdtemp(prefix=f"scaling_{os.environ.get('JOB_ID', 'job')}_")
    driver.scaling_report(os.path.join(outdir, "driver_scaling_report.json"))
    driver.run(iters=3)
    final = driver.get_objective_values()["obj"]
    cons = driver.get_constraint_values()
    print("RESULT obj", np.round(final, 5).tolist())
    print("RESULT cons", {k: np.round(v, 5).tolist() for k, v in cons.items()})


if __name__ == "__main__":
    main()
