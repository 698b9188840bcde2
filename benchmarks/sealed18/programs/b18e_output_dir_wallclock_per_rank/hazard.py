# Policy training with ZeRO-style sharded optimizer state: per-rank checkpoint shards, then consolidation for resume
# Source: https://github.com/TensorAuto/OpenTau/pull/396
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import datetime as dt
import glob
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


@dataclass
class TrainPipelineConfig:
    job_name: str = "pi0_libero"
    output_dir: Path | None = None
    steps: int = 4
    save_freq: int = 2
    lr: float = 0.05

    def validate(self):
        if self.output_dir is None:
            now = dt.datetime.now()
            root = Path(tempfile.gettempdir()) / "outputs" / "train"
            self.output_dir = root / f"{now:%Y-%m-%d}" / f"{now:%H-%M-%S-%f}_{self.job_name}"


cfg = TrainPipelineConfig()
cfg.validate()

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def save_checkpoint(cfg, step, rank, params, exp_avg):
    ckpt_dir = cfg.output_dir / "checkpoints" / f"{step:06d}"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    local_shard = np.asarray(exp_avg.addressable_shards[0].data)
    np.save(ckpt_dir / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.npy", local_shard)
    if rank == 0:
        np.save(ckpt_dir / "mp_rank_00_model_states.npy", np.asarray(params.addressable_shards[0].data))
    multihost_utils.sync_global_devices(f"checkpoint_{step}")
    return ckpt_dir


def consolidate(ckpt_dir, world_size):
    files = sorted(glob.glob(str(ckpt_dir / "*_optim_states.npy")))
    if len(files) != world_size:
        raise ValueError(f"Expected {world_size} of '*_optim_states.npy' under {ckpt_dir} but found {len(files)} files")
    return np.concatenate([np.load(f) for f in files])


def main():
    rank, world = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    rep, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("dp"))
    params = jax.make_array_from_process_local_data(rep, np.linspace(0, 1, 16, dtype=np.float32))
    exp_avg = jax.make_array_from_process_local_data(sharded, np.zeros(8, np.float32), (16,))

    @jax.jit
    def update(params, exp_avg, batch):
        grad = jax.grad(lambda p: jnp.mean((batch @ p[:, None] - 1.0) ** 2))(params)
        exp_avg = 0.9 * exp_avg + 0.1 * grad
        return params - cfg.lr * exp_avg, exp_avg

    rng = np.random.default_rng(rank)
    for step in range(1, cfg.steps + 1):
        batch = jax.make_array_from_process_local_data(sharded, rng.normal(size=(4, 16)).astype(np.float32))
        params, exp_avg = update(params, exp_avg, batch)
        if step % cfg.save_freq == 0:
            ckpt_dir = save_checkpoint(cfg, step, rank, params, exp_avg)
            full = consolidate(ckpt_dir, world)
            restored = jax.make_array_from_process_local_data(sharded, full[rank * 8:(rank + 1) * 8], (16,))
            total = jax.jit(jnp.sum, out_shardings=rep)(restored)
            print("RESULT step", step, "optim_state_sum", round(float(total.addressable_shards[0].data), 5))


if __name__ == "__main__":
    main()
