# A small MFC-style post_process driver: rank 0 reads the case input and assigns the default user
# inputs, the inputs are broadcast, the computational domain is decomposed along x with ghost
# buffers sized from the reconstruction order, and a numerical schlieren field is computed.
import os
from dataclasses import dataclass, fields

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

dflt_int = -100
WENO_TYPE, MUSCL_TYPE = 1, 2
CASE_INPUT = """
m = 31
n = 15
t_step_start = 0
t_step_stop = 100
schlieren_wrt = T
schlieren_alpha = 40.0
"""


@dataclass
class UserInputs:
    m: int = dflt_int
    n: int = dflt_int
    t_step_start: int = dflt_int
    t_step_stop: int = dflt_int
    recon_type: int = dflt_int
    weno_order: int = dflt_int
    muscl_order: int = dflt_int
    schlieren_alpha: float = float(dflt_int)


BCAST_INTS = ("m", "n", "t_step_start", "t_step_stop", "weno_order", "muscl_order")


def s_assign_default_values_to_user_inputs(p):
    p.recon_type, p.weno_order, p.muscl_order = WENO_TYPE, 5, 2
    p.schlieren_alpha = 1.0


def s_read_input_file(p, text):
    types = {f.name: f.type for f in fields(p)}
    for line in text.strip().splitlines():
        key, value = (s.strip() for s in line.split("="))
        if key in types:
            setattr(p, key, int(value) if types[key] in (int, "int") else float(value))


def s_mpi_bcast_user_inputs(p):
    ints = np.array([getattr(p, k) for k in BCAST_INTS], np.int32)
    ints = np.asarray(multihost_utils.broadcast_one_to_all(ints))
    for k, v in zip(BCAST_INTS, ints):
        setattr(p, k, int(v))
    p.schlieren_alpha = float(multihost_utils.broadcast_one_to_all(np.float32(p.schlieren_alpha)))


def s_mpi_decompose_computational_domain(p, rank, nprocs):
    recon_order = p.weno_order if p.recon_type == WENO_TYPE else p.muscl_order
    buff_size = recon_order + 1
    cells = (p.m + 1) // nprocs
    return rank * cells, cells, buff_size


def density(x, y):
    return 1.0 + 0.5 * np.tanh((x - 0.5 - 0.1 * np.sin(2 * np.pi * y)) / 0.05)


def s_populate_ghost_buffers(q, buff, rank, nprocs):
    left, right = q[buff:2 * buff], q[-2 * buff:-buff]
    slabs = np.asarray(multihost_utils.process_allgather(np.stack([left, right])))
    if rank > 0:
        q[:buff] = slabs[rank - 1, 1]
    if rank < nprocs - 1:
        q[-buff:] = slabs[rank + 1, 0]
    return q


def main():
    rank, nprocs = jax.process_index(), jax.process_count()
    p = UserInputs()
    if rank == 0:
        s_assign_default_values_to_user_inputs(p)
        s_read_input_file(p, CASE_INPUT)
    s_mpi_bcast_user_inputs(p)
    start, cells, buff = s_mpi_decompose_computational_domain(p, rank, nprocs)

    dx, dy = 1.0 / (p.m + 1), 1.0 / (p.n + 1)
    ix = np.arange(start - buff, start + cells + buff)
    X, Y = np.meshgrid((ix + 0.5) * dx, (np.arange(p.n + 1) + 0.5) * dy, indexing="ij")
    q = density(X, Y).astype(np.float32)
    q = s_populate_ghost_buffers(q, buff, rank, nprocs)

    grad_x = (q[buff + 1:buff + cells + 1] - q[buff - 1:buff + cells - 1]) / (2 * dx)
    mesh = Mesh(np.array(jax.devices()), ("x",))
    gx = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), grad_x, (p.m + 1, p.n + 1))
    schlieren = jax.jit(lambda g: jnp.exp(-p.schlieren_alpha * jnp.abs(g) / jnp.max(jnp.abs(g))))(gx)
    stats = jax.jit(lambda s: jnp.stack([s.min(), s.mean()]), out_shardings=NamedSharding(mesh, P()))(schlieren)
    print("RESULT grid", p.m + 1, p.n + 1, "buffer", buff)
    print("RESULT schlieren_min_mean", np.round(np.asarray(stats), 5).tolist())


if __name__ == "__main__":
    main()
