# Aggregated (AMR-method style) output group: each process writes its block, the close step builds the global index (ADIOS style, ported to JAX)
# Source: https://github.com/ornladios/ADIOS/issues/3
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import json
import os
import zlib

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class AmrGroupWriter:
    def __init__(self, group_name, rank, size):
        self.group_name = group_name
        self.rank, self.size = rank, size
        self.variables = {}
        self.attributes = {}

    def define_attribute(self, name, value):
        self.attributes[name] = value

    def write(self, name, array):
        self.variables[name] = np.asarray(array, dtype=np.float64)

    def _gather_var_index(self):
        local = np.array([[v.size, float(v.sum())] for _, v in sorted(self.variables.items())])
        return np.asarray(multihost_utils.process_allgather(local))

    def _gather_attr_sizes(self):
        blob = json.dumps(self.attributes, sort_keys=True).encode()
        sizes = np.array([len(blob), zlib.crc32(blob)], dtype=np.int64)
        return np.asarray(multihost_utils.process_allgather(sizes))

    def close(self):
        var_index = self._gather_var_index()
        footer = {"vars": var_index.reshape(self.size, -1).tolist()}
        if self.rank == 0:
            if self.attributes:
                attr_sizes = self._gather_attr_sizes()
                footer["attrs"] = attr_sizes.tolist()
            footer["nwriters"] = self.size
        multihost_utils.sync_global_devices(f"{self.group_name}:close")
        offsets = np.concatenate([[0], np.cumsum(var_index[:, :, 0].sum(axis=1))])
        return offsets, var_index


def main():
    rank, size = jax.process_index(), jax.process_count()
    nx_local = 6 + 2 * rank
    x = np.linspace(rank, rank + 1, nx_local)
    writer = AmrGroupWriter("restart", rank, size)
    writer.define_attribute("units/temperature", "K")
    writer.define_attribute("description", "AMR level 0 temperature and density")
    writer.write("temperature", 300.0 + 10.0 * np.sin(x))
    writer.write("density", 1.2 - 0.05 * x)
    offsets, var_index = writer.close()
    print("RESULT global_offsets", offsets.astype(int).tolist())
    print("RESULT index_checksum", round(float(var_index[:, :, 1].sum()), 6))


if __name__ == "__main__":
    main()
