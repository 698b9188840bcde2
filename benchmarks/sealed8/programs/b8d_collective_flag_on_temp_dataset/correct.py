# Collective transfer mode set on a dataset handle that is kept and used for the write
# Source: https://github.com/h5py/h5py/issues/2017 (port of an h5py/mpio collective-write bug to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import contextlib
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Dataset:
    """A handle onto a stored dataset; each handle has its own transfer property list."""

    def __init__(self, store: dict, name: str):
        self._store, self._name = store, name
        self._collective = False  # the handle's dxpl: independent unless switched

    @property
    @contextlib.contextmanager
    def collective(self):
        self._collective = True
        try:
            yield
        finally:
            self._collective = False

    def __setitem__(self, index: int, value) -> None:
        data = self._store[self._name]
        if self._collective:
            # collective filtered write: the chunks are gathered, compressed and written for everyone
            rec = np.array([[index, value]], dtype=np.int64)
            for i, v in np.asarray(multihost_utils.process_allgather(rec, tiled=True)):
                data[int(i)] = v
        else:
            data[index] = value  # independent: only this process's copy of the chunk sees it

    def __getitem__(self, key):
        return self._store[self._name][key]


class File:
    def __init__(self):
        self._store = {}

    def create_dataset(self, name: str, size: int, dtype: str, compression: str | None = None) -> Dataset:
        self._store[name] = np.zeros((size,), dtype=dtype)
        return Dataset(self._store, name)

    def __getitem__(self, name: str) -> Dataset:
        return Dataset(self._store, name)  # a new handle every time


def write_ranks(root: File) -> None:
    rank = jax.process_index()
    root.create_dataset("a", jax.process_count(), "i8", compression="gzip")
    dset = root["a"]  # fix: keep one handle, so the write uses the handle whose mode was switched
    with dset.collective:
        dset[rank] = rank + 10


def main():
    root = File()
    write_ranks(root)
    multihost_utils.sync_global_devices("written")
    print(f"RESULT a={root['a'][:].tolist()}")


if __name__ == "__main__":
    main()
