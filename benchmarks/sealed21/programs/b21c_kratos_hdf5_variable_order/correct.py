# A small Kratos-style HDF5 output process: the element data value containers of a distributed
# model part are written with "ALL_VARIABLES"; the variable list is collected by scanning the
# local elements and synchronising the names across ranks, then each variable is written with
# one collective (partitioned) write.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NAME_LEN, MAX_VARS = 24, 8
COMPONENTS = {"PRESSURE": 1, "DENSITY": 1, "VELOCITY": 3, "DISPLACEMENT": 3, "TEMPERATURE": 1}


class Element:
    def __init__(self, eid, data):
        self.Id, self.data = eid, data


FORMULATIONS = {
    "FluidElement2D3N": ["VELOCITY", "PRESSURE", "DENSITY"],
    "ConvectionDiffusionElement2D3N": ["PRESSURE", "TEMPERATURE", "VELOCITY"],
}


class ModelPart:
    def __init__(self, rank, nprocs, nelem=6):
        rng = np.random.default_rng(10 + rank)
        self.elements = []
        for i in range(nelem):
            x_center = (rank * nelem + i + 0.5) / (nprocs * nelem)
            formulation = "FluidElement2D3N" if x_center < 0.5 else "ConvectionDiffusionElement2D3N"
            data = {v: rng.normal(size=COMPONENTS[v]).astype(np.float32) for v in FORMULATIONS[formulation]}
            self.elements.append(Element(rank * nelem + i + 1, data))


def _encode(names):
    buf = np.zeros((MAX_VARS, NAME_LEN), np.uint8)
    for i, n in enumerate(names):
        buf[i, :len(n)] = np.frombuffer(n.encode(), np.uint8)
    return buf


def _decode(buf):
    return [bytes(row[row > 0]).decode() for row in buf if row.any()]


def collect_variable_names(model_part):
    """Rank-local scan of the data value containers, then synchronise the names over ranks."""
    local = []
    for elem in model_part.elements:
        for name in elem.data:
            if name not in local:
                local.append(name)
    gathered = np.asarray(multihost_utils.process_allgather(_encode(local)))
    names = list(local)
    for rank_names in gathered:
        for name in _decode(rank_names):
            if name not in names:
                names.append(name)
    return names


class ElementDataValueIO:
    def __init__(self, settings):
        self.prefix = settings["prefix"]
        self.list_of_variables = settings["list_of_variables"]

    def write(self, model_part, h5file):
        names = self.list_of_variables
        if names == ["ALL_VARIABLES"]:
            names = collect_variable_names(model_part)
        names = sorted(names)
        for name in names:
            ncomp = COMPONENTS[name]
            local = np.stack([e.data.get(name, np.zeros(ncomp, np.float32)) for e in model_part.elements])
            # partitioned write: every rank contributes its block of the global dataset
            h5file[self.prefix + name] = np.asarray(multihost_utils.process_allgather(local)).reshape(-1, ncomp)
        return names


def main():
    rank = jax.process_index()
    model_part = ModelPart(rank, jax.process_count())
    h5file = {}
    io = ElementDataValueIO({"prefix": "/ResultsData/ElementDataValues/", "list_of_variables": ["ALL_VARIABLES"]})
    names = io.write(model_part, h5file)
    print(f"rank {rank}: wrote {names}")
    for name in sorted(h5file):
        print("RESULT", name, h5file[name].shape, round(float(np.abs(h5file[name]).sum()), 4))


if __name__ == "__main__":
    main()
