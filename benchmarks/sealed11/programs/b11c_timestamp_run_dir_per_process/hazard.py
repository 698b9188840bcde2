# Each process names the run's output folder after its own clock reading, then reads the other blocks back from it
# Source: https://github.com/DiamondLightSource/httomo/pull/721
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import datetime
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
OUT_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_timestamp_run_dir", os.environ.get("JOB_ID", "local"))
N_SLICES, N_DET = 8, 32


def run_out_dir(pipeline_name):
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S_%f")
    return os.path.join(OUT_ROOT, f"{stamp}_output_{pipeline_name}")


def load_projections(pid):
    rng = np.random.default_rng(100 + pid)  # each process reads its own slab of sinograms
    return rng.standard_normal((N_SLICES // jax.process_count(), N_DET)).astype(np.float32)


@jax.jit
def reconstruct(sino):
    ramp = jnp.abs(jnp.fft.fftfreq(N_DET)).astype(jnp.float32)
    filtered = jnp.real(jnp.fft.ifft(jnp.fft.fft(sino, axis=1) * ramp, axis=1))
    return filtered - jnp.mean(filtered)


class Pipeline:
    def __init__(self, name):
        self.out_dir = run_out_dir(name)
        os.makedirs(self.out_dir, exist_ok=True)
        mesh = jax.make_mesh((jax.device_count(),), ("slices",), axis_types=(jax.sharding.AxisType.Auto,))
        self.sharding = NamedSharding(mesh, P("slices"))

    def run(self):
        sino = jax.make_array_from_process_local_data(self.sharding, load_projections(jax.process_index()))
        recon = reconstruct(sino)
        block = np.asarray(recon.addressable_data(0))
        np.save(os.path.join(self.out_dir, f"block_{jax.process_index():03d}.npy"), block)
        multihost_utils.sync_global_devices("blocks_written")
        return self.assemble()

    def assemble(self):
        blocks = [np.load(os.path.join(self.out_dir, f"block_{p:03d}.npy")) for p in range(jax.process_count())]
        return np.concatenate(blocks, axis=0)


def main():
    volume = Pipeline("tomo_standard").run()
    print("RESULT volume_shape", volume.shape)
    print("RESULT volume_checksum", round(float(np.abs(volume).sum()), 3))


main()
