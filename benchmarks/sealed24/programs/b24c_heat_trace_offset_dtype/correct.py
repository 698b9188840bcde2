import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.config.update("jax_enable_x64", True)
jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class MPICommunication:
    rank, size = jax.process_index(), jax.process_count()

    def chunk(self, gshape, split):
        n = gshape[split]
        block = -(-n // self.size)
        start = min(n, self.rank * block)
        return start, min(n, start + block) - start

    def Allreduce(self, value):
        return np.asarray(multihost_utils.process_allgather(value)).sum(0)


class DNDarray:
    def __init__(self, larray, gshape, split, comm):
        self.larray, self.gshape, self.split, self.comm = larray, gshape, split, comm
        self.dtype = larray.dtype

    @property
    def lshape(self):
        return self.larray.shape

    def is_distributed(self):
        return self.split is not None and self.comm.size > 1


def trace(a, offset=0):
    """Sum along the offset diagonal of a 2D DNDarray (split=0 or 1)."""
    if offset <= -a.gshape[0] or offset >= a.gshape[1]:
        sum_along_diagonals = np.array(0, dtype=a.dtype)
    else:
        a_sub = a.larray
        if a.is_distributed():
            offset_split, _ = a.comm.chunk(a.gshape, a.split)
            offset = offset + offset_split if a.split == 0 else offset - offset_split
        if offset > 0:
            a_sub = a_sub[:, min(offset, a_sub.shape[1]):]
        elif offset < 0:
            a_sub = a_sub[min(-offset, a_sub.shape[0]):, :]
        if 0 not in a_sub.shape:
            sum_along_diagonals = np.trace(a_sub)
            # make sure result is of correct dtype
            sum_along_diagonals = sum_along_diagonals.astype(a_sub.dtype)
        else:
            sum_along_diagonals = np.array(0, dtype=a_sub.dtype)
    if a.is_distributed():
        sum_along_diagonals = a.comm.Allreduce(sum_along_diagonals)
    return sum_along_diagonals.item()


def backbone_coordinates(n_residues, seed=7):
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(n_residues, 3))
    steps /= np.linalg.norm(steps, axis=1, keepdims=True)
    return np.cumsum(3.8 * steps, axis=0)


def contact_map(coords, comm, cutoff=8.0):
    gshape = (len(coords), len(coords))
    start, length = comm.chunk(gshape, 0)
    rows = coords[start:start + length]
    d = np.linalg.norm(rows[:, None, :] - coords[None, :, :], axis=-1)
    return DNDarray((d < cutoff).astype(np.int32), gshape, 0, comm)


def main():
    comm = MPICommunication()
    coords = backbone_coordinates(24)
    contacts = contact_map(coords, comm)
    print(f"rank {comm.rank}: local contact map {contacts.lshape}")
    per_separation = {}
    for k in range(3, contacts.gshape[1]):
        per_separation[k] = trace(contacts, offset=k)
    n_contacts = sum(per_separation.values())
    contact_order = sum(k * c for k, c in per_separation.items()) / max(n_contacts, 1) / contacts.gshape[0]
    print("RESULT contacts_per_separation", per_separation)
    print("RESULT relative_contact_order", round(contact_order, 6))


if __name__ == "__main__":
    main()
