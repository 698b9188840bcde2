# Spectrograph PSF fit: bundles are fitted round-robin across ranks; a singular fit is recorded as failed and every rank reaches the merge
# Source: https://github.com/desihub/desispec/issues/2209
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import logging
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
log = logging.getLogger("psf")


@dataclass
class PSFConfig:
    n_bundles: int = 4
    fibers_per_bundle: int = 5
    npix: int = 64
    dead_bundle: int = 1          # this exposure has a bundle whose fibers were not illuminated


def arc_frame(cfg, bundle):
    """Arc-lamp trace for every fiber of a bundle (zeros where the bundle is dead)."""
    rng = np.random.default_rng(500 + bundle)
    y = np.arange(cfg.npix, dtype=np.float64)
    lines = np.array([12.0, 30.0, 47.0])
    sigma = 1.2 + 0.05 * bundle
    flux = np.exp(-0.5 * ((y[None, :] - lines[:, None]) / sigma) ** 2).sum(0)
    frame = np.tile(flux, (cfg.fibers_per_bundle, 1)) * rng.uniform(0.9, 1.1, (cfg.fibers_per_bundle, 1))
    return np.zeros_like(frame) if bundle == cfg.dead_bundle else frame


def fit_bundle(frame):
    """Linear least-squares fit of per-fiber amplitude and a shared quadratic background."""
    y = np.linspace(-1.0, 1.0, frame.shape[1])
    design = np.stack([frame.mean(0), np.ones_like(y), y, y * y], axis=1)
    normal = design.T @ design
    coeff = np.linalg.solve(normal, design.T @ frame.T)         # LinAlgError if the bundle is dark
    return coeff.mean(axis=1)


def run_bundles(cfg, rank, nproc):
    mine = list(range(rank, cfg.n_bundles, nproc))
    coeffs = np.zeros((len(mine), 4), np.float32)
    for i, b in enumerate(mine):
        try:
            coeffs[i] = fit_bundle(arc_frame(cfg, b))
        except np.linalg.LinAlgError as exc:
            log.error("bundle %d failed: %s", b, exc)
            coeffs[i] = np.nan                                     # still take part in the merge
    return mine, coeffs


def main():
    logging.basicConfig(level=logging.INFO)
    cfg = PSFConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mine, coeffs = run_bundles(cfg, rank, nproc)
    allc = np.asarray(multihost_utils.process_allgather(coeffs))          # merge the per-bundle PSFs
    failed = np.isnan(allc).any(axis=-1).reshape(-1)
    multihost_utils.sync_global_devices("psf_merged")
    print("RESULT bundles_failed", int(failed.sum()))
    print("RESULT mean_amplitude", round(float(np.nanmean(allc[..., 0])), 4))


if __name__ == "__main__":
    main()
