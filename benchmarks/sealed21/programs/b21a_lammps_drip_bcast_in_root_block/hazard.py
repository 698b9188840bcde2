import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NPARAMS_PER_LINE = 2 + 14
DRIP_FILE = """# DATE: 2019-04-19 UNITS: metal  CONTRIBUTOR: Mingjian Wen
# C0  C2  C4  C  delta  lambda  A  z0  B  eta  rhocut  rcut  normalcut  unused
C C  1.1598e-02 1.2981e-02 3.2515e-02 7.8151e-03 0.578 3.629 1.0e-04 3.34 7.6e-04 1.0 1.562 12.0 3.7 0.0
"""


class Error:
    def all(self, msg):
        multihost_utils.sync_global_devices("error->all")
        raise RuntimeError(msg)


class PairDRIP:
    def __init__(self, me, elements):
        self.me = me
        self.elements = elements
        self.nparams = 0
        self.maxparam = 0
        self.params = np.zeros((0, NPARAMS_PER_LINE))
        self.error = Error()

    def read_file(self, filename):
        # open file on proc 0
        if self.me == 0:
            rows = []
            with open(filename) as f:
                for line in f:
                    words = line.split("#")[0].split()
                    if not words:
                        continue
                    if len(words) != NPARAMS_PER_LINE:
                        raise RuntimeError("Incorrect format in DRIP potential file")
                    if words[0] not in self.elements or words[1] not in self.elements:
                        continue
                    ielement, jelement = self.elements.index(words[0]), self.elements.index(words[1])
                    rows.append([ielement, jelement] + [float(w) for w in words[2:]])
            self.nparams = len(rows)
            self.maxparam = self.nparams
            self.params = np.asarray(rows)

            self.nparams = int(multihost_utils.broadcast_one_to_all(np.int32(self.nparams)))
            self.maxparam = int(multihost_utils.broadcast_one_to_all(np.int32(self.maxparam)))

            if self.me != 0:
                self.params = np.zeros((self.maxparam, NPARAMS_PER_LINE))

            self.params = np.asarray(multihost_utils.broadcast_one_to_all(self.params))

        nel = len(self.elements)
        self.elem2param = np.full((nel, nel), -1, np.int32)
        for i in range(nel):
            for j in range(nel):
                n = -1
                for m in range(self.nparams):
                    if self.params[m, 0] == i and self.params[m, 1] == j:
                        if n >= 0:
                            self.error.all("DRIP potential file has duplicate entry")
                        n = m
                if n < 0:
                    self.error.all("Potential file is missing an entry")
                self.elem2param[i, j] = n

    def compute(self, x):
        p = self.params[self.elem2param[0, 0], 2:]
        C0, C2, C4, C, delta, lam, A, z0 = p[:8]
        r = jnp.linalg.norm(x[:, None] - x[None], axis=-1) + jnp.eye(len(x)) * 1e3
        e_rep = jnp.exp(-lam * (r - z0)) * (C + C0)
        e_att = -A * (z0 / r) ** 6
        return float(0.5 * jnp.sum(jnp.where(r < p[11], e_rep + e_att, 0.0)))


def main():
    me = jax.process_index()
    potfile = os.path.join(tempfile.gettempdir(), f"C_{os.environ.get('JOB_ID', 'local')}.drip")
    if me == 0:
        with open(potfile, "w") as f:
            f.write(DRIP_FILE)
    pair = PairDRIP(me, elements=["C"])
    pair.read_file(potfile)

    rng = np.random.default_rng(4)
    layer = np.stack(np.meshgrid(np.arange(3) * 2.46, np.arange(3) * 2.46), -1).reshape(-1, 2)
    atoms = np.concatenate([np.c_[layer, np.zeros(9)], np.c_[layer + 1.23, np.full(9, 3.4)]])
    mine = atoms[me::jax.process_count()] + rng.normal(0, 0.01, size=atoms[me::jax.process_count()].shape)
    all_atoms = np.asarray(multihost_utils.process_allgather(mine)).reshape(-1, 3)
    eng = pair.compute(jnp.asarray(all_atoms))
    print("RESULT nparams", pair.nparams)
    print("RESULT pe", round(eng, 5))


if __name__ == "__main__":
    main()
