# Port of an MFEM bug: ParL2FaceRestriction::Mult returns early when the rank has no faces of the
# requested type, skipping the face-neighbour exchange that the other ranks enter.
# Source: https://github.com/mfem/mfem/pull/3747
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_ELEMENTS = 8
# METIS-like partition of a 1D DG mesh: rank 0 owns both ends, rank 1 the middle elements.
PARTITION = np.array([0, 0, 1, 1, 1, 1, 0, 0])


class ParGridFunction:
    def __init__(self, owned: np.ndarray, values: np.ndarray):
        self.owned = owned
        self.values = values
        self.face_nbr_data = None

    def exchange_face_nbr_data(self) -> None:
        """Share the owned element values with the neighbouring ranks (collective)."""
        full = np.zeros(NUM_ELEMENTS, np.float32)
        full[self.owned] = self.values
        self.face_nbr_data = np.asarray(multihost_utils.process_allgather(full)).sum(axis=0)


class ParL2FaceRestriction:
    def __init__(self, owned: np.ndarray, face_type: str):
        faces = [(e, e + 1) for e in range(NUM_ELEMENTS - 1)] if face_type == "interior" else \
                [(0, -1), (NUM_ELEMENTS - 1, -1)]
        self.faces = [f for f in faces if f[0] in set(owned.tolist())]
        self.nf = len(self.faces)

    def mult(self, x: ParGridFunction) -> np.ndarray:
        x.exchange_face_nbr_data()  # fix: every rank takes part in the exchange, even with no faces
        if self.nf == 0:
            return np.zeros(0, np.float32)
        out = np.zeros(self.nf, np.float32)
        for k, (e1, e2) in enumerate(self.faces):
            out[k] = x.face_nbr_data[e1] - (x.face_nbr_data[e2] if e2 >= 0 else 0.0)
        return out


def apply_dg_operator(x: ParGridFunction) -> float:
    jump = 0.0
    for face_type in ("boundary", "interior"):
        restriction = ParL2FaceRestriction(x.owned, face_type)
        jump += float(np.sum(restriction.mult(x) ** 2))
    return jump


owned = np.flatnonzero(PARTITION == jax.process_index())
u = ParGridFunction(owned, np.sin(owned.astype(np.float32)))
local_jump = apply_dg_operator(u)
total = float(np.sum(multihost_utils.process_allgather(np.float32(local_jump))))
print(f"RESULT face_jump {total:.5f}")
