# LTX2-style video pipeline (JAX): latents are sharded over all devices of a multi-host mesh, the
# denoising loop and the VAE decode run under jit, and the decoded video is turned into numpy frames.
# Source: https://github.com/AI-Hypercomputer/maxdiffusion/pull/424
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class PipelineConfig:
    num_frames: int = 4
    height: int = 8
    width: int = 8
    channels: int = 4
    num_inference_steps: int = 4
    seed: int = 0


class LTX2Pipeline:
    def __init__(self, config: PipelineConfig):
        self.config = config
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
        # frames are split over the data axis (one slice of frames per host)
        self.latent_sharding = NamedSharding(self.mesh, P("data"))
        self.decoder_w = jnp.ones((config.channels, 3)) / config.channels
        self._step = jax.jit(self._denoise_step, out_shardings=self.latent_sharding)
        self._decode = jax.jit(self._vae_decode, out_shardings=self.latent_sharding)

    @staticmethod
    def _denoise_step(latents, sigma):
        velocity = latents - jnp.mean(latents)          # global mean: a cross-host reduction
        return latents - sigma * 0.1 * velocity

    def _vae_decode(self, latents):
        return jnp.tanh(latents @ self.decoder_w)

    def prepare_latents(self):
        c = self.config
        per_host = c.num_frames // jax.process_count()
        rng = np.random.default_rng(c.seed + jax.process_index())
        local = rng.normal(size=(per_host, c.height, c.width, c.channels)).astype(np.float32)
        return jax.make_array_from_process_local_data(self.latent_sharding, local)

    def _postprocess_video(self, video):
        # VAE outputs (T, H, W, C); the video processor expects uint8 frames
        frames = np.array(video)
        return np.clip((frames + 1.0) * 127.5, 0, 255).astype(np.uint8)

    def __call__(self):
        latents = self.prepare_latents()
        sigmas = np.linspace(1.0, 0.1, self.config.num_inference_steps)
        for sigma in sigmas:
            latents = self._step(latents, float(sigma))
        video = self._decode(latents)
        return self._postprocess_video(video)


def export_to_video(frames, name):
    out = os.path.join(tempfile.gettempdir(), f"{name}_{os.environ.get('JOB_ID', 'local')}.npy")
    if jax.process_index() == 0:
        np.save(out, frames)
    return out


def main():
    pipe = LTX2Pipeline(PipelineConfig())
    frames = pipe()
    export_to_video(frames, "ltx2_sample")
    print(f"RESULT frames_shape {list(frames.shape)}")
    print(f"RESULT frames_checksum {int(frames.astype(np.int64).sum())}")


if __name__ == "__main__":
    main()
