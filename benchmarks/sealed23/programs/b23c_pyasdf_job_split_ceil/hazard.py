# Parallel comparison of observed and synthetic seismograms stored per station (an ASDF-like
# pair of data sets): every rank takes its share of the stations common to both data sets,
# computes a misfit per station, and the per-station results are gathered at the end.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NPTS = 256


class WaveformDataSet:
    def __init__(self, tag, stations, shift=0.0):
        self.tag = tag
        t = np.linspace(0.0, 10.0, NPTS, dtype=np.float32)
        self.waveforms = {}
        for k, name in enumerate(stations):
            arrival = 2.0 + 0.7 * k + shift
            self.waveforms[name] = np.exp(-((t - arrival) / 0.4) ** 2) * np.sin(6.0 * t)

    def list(self):
        return list(self.waveforms)


class ParallelProcessor:
    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def process_two_files_without_parallel_output(self, ds, other_ds, process_function):
        usable_stations = sorted(set(ds.list()) & set(other_ds.list()))

        def chunks(items, n):
            for i in range(0, len(items), n):
                yield items[i:i + n]

        chunksize = int(math.ceil(len(usable_stations) / self.size))
        all_chunks = list(chunks(usable_stations, chunksize))
        jobs = all_chunks[self.rank]

        results = {}
        for station in jobs:
            results[station] = process_function(ds.waveforms[station], other_ds.waveforms[station])

        local = np.array([sum(results.values()), len(results)], dtype=np.float32)
        gathered = np.asarray(multihost_utils.process_allgather(local))
        return float(gathered[:, 0].sum()), int(gathered[:, 1].sum())


@jax.jit
def l2_misfit(obs, syn):
    return 0.5 * jnp.sum((obs - syn) ** 2) / obs.shape[0]


def misfit(obs, syn):
    return float(l2_misfit(jnp.asarray(obs), jnp.asarray(syn)))


def main():
    rank, size = jax.process_index(), jax.process_count()
    observed = WaveformDataSet("raw_recording", ["IU.ANMO", "II.BFO", "IU.HRV", "G.SSB"])
    synthetic = WaveformDataSet("synthetic", ["IU.ANMO", "GE.DAV"], shift=0.15)
    proc = ParallelProcessor(rank, size)
    total, count = proc.process_two_files_without_parallel_output(observed, synthetic, misfit)
    print(f"rank {rank}: done")
    print("RESULT stations", count)
    print("RESULT total_misfit", round(total, 6))


if __name__ == "__main__":
    main()
