# check_totals for a model whose objective and constraint components sit in a ParallelGroup branch
# owned by process 0.  For every finite-difference column the "of" outputs are scattered into a
# Jacobian column; if any of them lives on another process the scatter must go through a
# cross-process transfer, otherwise a local copy is enough.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OF = ["obj_cmp.obj", "con_cmp1.con1", "con_cmp2.con2"]
WRT = ["x", "z0", "z1"]
OWNERS = {"obj_cmp.obj": 0, "con_cmp1.con1": 0, "con_cmp2.con2": 0}


@jax.jit
def sellar(x, z0, z1):
    y1 = z0 ** 2 + z1 + x - 0.2 * 3.0
    y2 = jnp.sqrt(jnp.abs(y1)) + z0 + z1
    return jnp.stack([x ** 2 + z1 + y1 + jnp.exp(-y2), 3.16 - y1, y2 - 24.0])


class ParallelModel:
    def __init__(self):
        self.rank, self.size = jax.process_index(), jax.process_count()
        self._var_abs2meta = {n: {"size": 1} for n in OF if OWNERS[n] == self.rank}
        self._owning_rank = OWNERS
        self.inputs = {"x": 1.0, "z0": 5.0, "z1": 2.0}

    def run_model(self):
        vals = np.asarray(sellar(self.inputs["x"], self.inputs["z0"], self.inputs["z1"]))
        # outputs exist only on the owning process
        self.outputs = {n: vals[i:i + 1] for i, n in enumerate(OF) if n in self._var_abs2meta}

    def _get_jac_col_scatter(self):
        has_dist_data = False
        sinds = []
        for name in OF:
            if name in self._var_abs2meta:
                owner = self.rank
            else:
                owner = self._owning_rank[name]
                has_dist_data = self.size > 1
            sinds.append((name, owner))
        if self.size > 1:
            has_dist_data = bool(np.asarray(multihost_utils.process_allgather(np.int32(has_dist_data))).any())
        return sinds, has_dist_data

    def jac_column(self):
        sinds, has_dist_data = self._get_jac_col_scatter()
        if has_dist_data:
            col = np.array([self.outputs[n][0] if o == self.rank else 0.0 for n, o in sinds], np.float32)
            return np.asarray(multihost_utils.process_allgather(col)).sum(0)
        return np.array([self.outputs[n][0] for n, _ in sinds], np.float32)


def check_totals(model, step=1e-3):
    model.run_model()
    base = model.jac_column()
    jac = np.zeros((len(OF), len(WRT)), np.float32)
    for j, w in enumerate(WRT):
        model.inputs[w] += step
        model.run_model()
        jac[:, j] = (model.jac_column() - base) / step
        model.inputs[w] -= step
    return jac


def main():
    model = ParallelModel()
    jac = check_totals(model)
    # every process reports the Jacobian it assembled, gathered for comparison
    all_jacs = np.asarray(multihost_utils.process_allgather(jac))
    print("RESULT jac", np.round(all_jacs[0], 2).tolist())
    print("RESULT consistent", bool(np.allclose(all_jacs, all_jacs[0])))


if __name__ == "__main__":
    main()
