# TXPipe noise maps (JAX port): every rank bins its share of the shear catalogue into pixel maps,
# then the maps are summed over processes before the root writes them out.
# Source: https://github.com/LSSTDESC/TXPipe/pull/303 (review in https://github.com/LSSTDESC/TXPipe/pull/219)
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NPIX = 12
CHUNK_ROWS = 40


class ProcessComm:
    """Small stand-in for the mpi4jax reduce the stage uses: functional, returns the sum."""

    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("proc",))
        self.rank = jax.process_index()
        self.size = jax.process_count()
        self._sum = jax.jit(lambda a: jnp.sum(a, axis=0),
                            out_shardings=NamedSharding(self.mesh, P()))

    def reduce(self, x):
        stacked = jax.make_array_from_process_local_data(
            NamedSharding(self.mesh, P("proc")), np.asarray(x)[None])
        return self._sum(stacked)


@jax.jit
def bin_chunk(g1_map, g2_map, ngal_map, pix, g1, g2):
    g1_map = g1_map.at[pix].add(g1)
    g2_map = g2_map.at[pix].add(g2)
    ngal_map = ngal_map.at[pix].add(1.0)
    return g1_map, g2_map, ngal_map


class TXNoiseMapsJax:
    def __init__(self, comm, n_rows=400):
        self.comm = comm
        self.n_rows = n_rows
        rng = np.random.default_rng(1234)
        self.catalogue = {
            "pix": rng.integers(0, NPIX, n_rows),
            "g1": rng.normal(0, 0.2, n_rows).astype(np.float32),
            "g2": rng.normal(0, 0.2, n_rows).astype(np.float32),
        }

    def data_ranges(self):
        # each rank takes every size-th chunk of the catalogue
        for i, start in enumerate(range(0, self.n_rows, CHUNK_ROWS)):
            if i % self.comm.size == self.comm.rank:
                yield start, min(start + CHUNK_ROWS, self.n_rows)

    def run(self):
        G1 = jnp.zeros(NPIX)
        G2 = jnp.zeros(NPIX)
        ngal = jnp.zeros(NPIX)
        for s, e in self.data_ranges():
            cat = {k: v[s:e] for k, v in self.catalogue.items()}
            G1, G2, ngal = bin_chunk(G1, G2, ngal, cat["pix"], cat["g1"], cat["g2"])

        # Now we have finished looping through the data, sum everything over the processes
        if self.comm is not None:
            G1 = self.comm.reduce(G1)
            G2 = self.comm.reduce(G2)
            ngal = self.comm.reduce(ngal)
        return self.finalize(G1, G2, ngal)

    def finalize(self, G1, G2, ngal):
        G1, G2, ngal = (np.asarray(a) for a in (G1, G2, ngal))
        mean_g1 = np.where(ngal > 0, G1 / np.maximum(ngal, 1), 0.0)
        out = os.path.join(tempfile.gettempdir(),
                           f"txpipe_noise_{os.environ.get('JOB_ID', 'local')}_{self.comm.rank}.npz")
        np.savez(out, G1=G1, G2=G2, ngal=ngal)
        return ngal, mean_g1


def main():
    stage = TXNoiseMapsJax(ProcessComm())
    ngal, mean_g1 = stage.run()
    print(f"RESULT ngal_total {int(ngal.sum())}")
    print(f"RESULT ngal_map {ngal.astype(int).tolist()}")
    print(f"RESULT mean_g1 {np.round(mean_g1, 4).tolist()}")


if __name__ == "__main__":
    main()
