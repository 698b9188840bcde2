# TOAST-style binned mapmaking (JAX port): observations are distributed over processes; the pixel
# distribution (which sky pixels are hit anywhere) is created on first use from a global reduction,
# then the local maps are accumulated and summed over processes.
# Source: https://github.com/hpc4cmb/toast/pull/395
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NPIX = 24
MESH = jax.sharding.Mesh(np.array(jax.devices()), ("world",))
_SUM = jax.jit(lambda a: jnp.sum(a, 0), out_shardings=NamedSharding(MESH, P()))
_MAX = jax.jit(lambda a: jnp.max(a, 0), out_shardings=NamedSharding(MESH, P()))


def allreduce(local, op):
    arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("world")),
                                                 np.asarray(local, np.float32)[None])
    return np.asarray((_SUM if op == "sum" else _MAX)(arr))


@dataclasses.dataclass
class Observation:
    name: str
    det_flags: dict
    pixels: dict
    signal: dict

    def select_local_detectors(self, flag_mask):
        return [d for d, f in sorted(self.det_flags.items()) if not (f & flag_mask)]


@dataclasses.dataclass
class PixelDistribution:
    hit_submaps: np.ndarray

    @property
    def n_local_pix(self):
        return int(self.hit_submaps.sum())


def create_pixel_distribution(data):
    hits = np.zeros(NPIX, np.float32)
    for ob in data["obs"]:
        for det in ob.pixels:
            hits[ob.pixels[det]] = 1.0
    return PixelDistribution(allreduce(hits, "max") > 0)


class BinMap:
    def __init__(self, pixel_dist="pixel_dist", det_flag_mask=1):
        self.pixel_dist = pixel_dist
        self.det_flag_mask = det_flag_mask

    def exec(self, data):
        zmap = np.zeros(NPIX, np.float32)
        hits = np.zeros(NPIX, np.float32)
        for ob in data["obs"]:
            dets = ob.select_local_detectors(self.det_flag_mask)
            for det in dets:
                # Check map domain objects
                if self.pixel_dist not in data:
                    data[self.pixel_dist] = create_pixel_distribution(data)
                np.add.at(zmap, ob.pixels[det], ob.signal[det])
                np.add.at(hits, ob.pixels[det], 1.0)
        zmap = allreduce(zmap, "sum")
        hits = allreduce(hits, "sum")
        return np.where(hits > 0, zmap / np.maximum(hits, 1), 0.0)


def distribute_observations(n_obs=2, n_dets=3, nsamp=20):
    data = {"obs": []}
    for i in range(jax.process_index(), n_obs, jax.process_count()):
        rng = np.random.default_rng(100 + i)
        # the last observation had all of its detectors flagged during preprocessing
        flags = {f"d{k}": (1 if i == n_obs - 1 else 0) for k in range(n_dets)}
        pixels = {d: rng.integers(0, NPIX, nsamp) for d in flags}
        signal = {d: rng.normal(size=nsamp).astype(np.float32) for d in flags}
        data["obs"].append(Observation(f"obs{i}", flags, pixels, signal))
    return data


def main():
    data = distribute_observations()
    binned = BinMap().exec(data)
    print(f"RESULT map_sum {float(binned.sum()):.5f}")
    print(f"RESULT hit_pixels {int((binned != 0).sum())}")


if __name__ == "__main__":
    main()
