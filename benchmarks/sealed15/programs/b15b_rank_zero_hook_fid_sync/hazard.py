# GAN-style image model: validation-end hook, decorated rank_zero_only, computes PSNR and an FID whose compute() syncs states
# Source: https://github.com/Lightning-AI/torchmetrics/issues/2684
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
FEAT = 4


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if jax.process_index() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped


class PSNR:
    """Local metric: no cross-process state."""

    def __init__(self):
        self.sq_err, self.n = 0.0, 0

    def update(self, pred, target):
        self.sq_err += float(np.sum((pred - target) ** 2))
        self.n += pred.size

    def compute(self):
        return 10.0 * np.log10(1.0 / (self.sq_err / self.n))


class FrechetDistance:
    """Keeps per-process feature sums; compute() first syncs them across processes (sync_on_compute=True)."""

    def __init__(self, sync_on_compute=True):
        self.sync_on_compute = sync_on_compute
        self.reset()

    def reset(self):
        self.state = {"real_sum": np.zeros(FEAT), "fake_sum": np.zeros(FEAT), "real_n": 0.0, "fake_n": 0.0}

    def update(self, feats, real):
        key = "real" if real else "fake"
        self.state[f"{key}_sum"] = self.state[f"{key}_sum"] + feats.sum(0)
        self.state[f"{key}_n"] += len(feats)

    def _sync(self):
        flat = np.concatenate([self.state["real_sum"], self.state["fake_sum"], [self.state["real_n"], self.state["fake_n"]]])
        total = np.asarray(multihost_utils.process_allgather(flat.astype(np.float32))).sum(0)
        return total[:FEAT], total[FEAT:2 * FEAT], total[-2], total[-1]

    def compute(self):
        if self.sync_on_compute:
            rs, fs, rn, fn = self._sync()
        else:
            rs, fs, rn, fn = self.state["real_sum"], self.state["fake_sum"], self.state["real_n"], self.state["fake_n"]
        return float(np.sum((rs / rn - fs / fn) ** 2))


@jax.jit
def generator_step(w, z, real):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.tanh(z @ w) - real) ** 2))(w)
    return w - 0.2 * g, loss


class Module:
    def __init__(self):
        self.w = jnp.eye(FEAT, dtype=jnp.float32) * 0.3
        self.psnr, self.fid = PSNR(), FrechetDistance()
        self.logged = []

    def train_epoch(self, epoch):
        rng = np.random.default_rng(10 * epoch + jax.process_index())
        for _ in range(3):
            z = rng.normal(size=(8, FEAT)).astype(np.float32)
            real = np.tanh(z * 0.8).astype(np.float32)
            gz, gr = (multihost_utils.host_local_array_to_global_array(a, MESH, P("dp")) for a in (z, real))
            self.w, _ = generator_step(self.w, gz, gr)

    def validation(self, epoch):
        rng = np.random.default_rng(100 + epoch + jax.process_index())
        z = rng.normal(size=(8, FEAT)).astype(np.float32)
        real = np.tanh(z * 0.8).astype(np.float32)
        fake = np.tanh(z @ np.asarray(multihost_utils.process_allgather(self.w, tiled=True)))
        self.psnr.update(fake, real)
        self.fid.update(real, real=True)
        self.fid.update(fake, real=False)

    @rank_zero_only
    def on_validation_end(self, epoch):
        metrics = {"psnr": self.psnr.compute(), "fid": self.fid.compute()}
        self.logged.append((epoch, round(metrics["fid"], 6)))
        print(f"epoch {epoch}: psnr {metrics['psnr']:.3f} fid {metrics['fid']:.6f}")


def main():
    module = Module()
    for epoch in range(2):
        module.train_epoch(epoch)
        module.validation(epoch)
        module.on_validation_end(epoch)
        module.fid.reset()
    final = np.asarray(multihost_utils.process_allgather(module.w, tiled=True))
    print("RESULT w_trace", round(float(np.trace(final)), 5))


if __name__ == "__main__":
    main()
