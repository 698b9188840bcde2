# Multidisciplinary analysis setup: component graph ordering, distributed unknowns vector layout, data transfer
# Source: https://github.com/OpenMDAO/OpenMDAO1/pull/434
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DISCIPLINES = {  # name -> (output size, gain)
    "aero": (6, 1.3), "structures": (9, 0.7), "propulsion": (4, 2.1), "weights": (3, 0.4),
    "thermal": (5, 1.1), "controls": (2, 0.9), "stability": (7, 1.6), "cost": (1, 3.0),
}


class Component:
    def __init__(self, name, size, func):
        self.name, self.size, self.func = name, size, func


class Group:
    def __init__(self):
        self.components = {}
        self.graph = {}  # name -> set of downstream component names

    def add(self, comp, after=()):
        self.components[comp.name] = comp
        self.graph.setdefault(comp.name, set())
        for src in after:
            self.graph.setdefault(src, set()).add(comp.name)

    def topological_order(self):
        indegree = {n: 0 for n in self.graph}
        for succs in self.graph.values():
            for s in succs:
                indegree[s] += 1
        ready = {n for n, d in indegree.items() if d == 0}
        order = []
        while ready:
            nxt = set()
            for n in ready:
                order.append(n)
                for s in self.graph[n]:
                    indegree[s] -= 1
                    if indegree[s] == 0:
                        nxt.add(s)
            ready = nxt
        return order


def build_model():
    g = Group()
    g.add(Component("des_vars", 4, lambda v: np.array([1.0, 0.5, -0.25, 2.0])))
    for name, (size, gain) in DISCIPLINES.items():
        g.add(Component(name, size, lambda v, size=size, gain=gain:
                        gain * np.cos(np.arange(size) + v["des_vars"].sum())), after=["des_vars"])
    g.add(Component("mission", 2, lambda v: np.array([sum(w * v[d].mean() for w, d in enumerate(DISCIPLINES, 1)),
                                                      max(v[d][0] for d in DISCIPLINES)])),
          after=list(DISCIPLINES))
    g.add(Component("obj_cmp", 1, lambda v: np.array([v["mission"][0] / (1.0 + abs(v["mission"][1]))])),
          after=["mission"])
    return g


def setup_vector_layout(group, order):
    offsets, pos = {}, 0
    for name in order:
        offsets[name] = (pos, pos + group.components[name].size)
        pos += group.components[name].size
    return offsets, pos


def run_model(group, order, stop_at):
    values = {}
    for name in order:
        if name in stop_at:
            continue
        values[name] = group.components[name].func(values)
    return values


def transfer(full, offsets, sources):
    """Scatter from the unknowns vector into a component's inputs (index sets built from the layout)."""
    return {src: full[offsets[src][0]:offsets[src][1]] for src in sources}


def assemble_unknowns(values, offsets, total, mesh):
    """Each process fills the part of the distributed unknowns vector it owns (PETSc-style ownership range)."""
    nproc, rank = jax.process_count(), jax.process_index()
    local_len = -(-total // nproc)
    lo, hi = rank * local_len, (rank + 1) * local_len
    local = np.zeros(local_len, np.float32)
    for name, (start, stop) in offsets.items():
        for i in range(max(start, lo), min(stop, hi)):
            local[i - lo] = values[name][i - start]
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("vec")), local)


def main():
    mesh = Mesh(np.array(jax.devices()), ("vec",))
    group = build_model()
    order = group.topological_order()
    offsets, total = setup_vector_layout(group, order)
    values = run_model(group, order, stop_at=("mission", "obj_cmp"))
    values.update(mission=np.zeros(2), obj_cmp=np.zeros(1))
    unknowns = assemble_unknowns(values, offsets, total, mesh)
    norm = jax.jit(lambda u: jnp.sqrt(jnp.sum(u * u)))(unknowns)
    full = np.asarray(multihost_utils.process_allgather(unknowns, tiled=True))
    inputs = transfer(full, offsets, DISCIPLINES)
    mission = group.components["mission"].func(inputs)
    obj = group.components["obj_cmp"].func({"mission": mission})
    print("RESULT unknowns_norm", round(float(norm), 4))
    print("RESULT mission", [round(float(m), 5) for m in mission])
    print("RESULT obj", round(float(obj[0]), 5))


if __name__ == "__main__":
    main()
