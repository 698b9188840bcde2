# DeepSpeed-Inference loader (fixed): the repo root is resolved once on all ranks; rank 0's json writer has no barrier
# Source: https://github.com/huggingface/transformers-bloom-inference/pull/40 (port of a DeepSpeed /
# torch.distributed deadlock in bloom-ds-inference.py to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

rank = jax.process_index()
CACHE = Path(tempfile.gettempdir()) / "mcjax_sealed8_bloom_cache" / os.environ.get("JOB_ID", "local")
MESH = jax.make_mesh((jax.device_count(),), ("tp",))


def snapshot_download(model_name: str) -> Path:
    """Stand-in for huggingface_hub.snapshot_download: fills the shared cache once."""
    root = CACHE / model_name.replace("/", "--")
    root.mkdir(parents=True, exist_ok=True)
    for i in range(2):
        shard = root / f"pytorch_model_{i:05d}.bin"
        if not shard.exists():
            np.save(str(shard) + ".npy", np.arange(8, dtype=np.float32) + i)
            shard.write_text(str(shard) + ".npy")
    return root


def get_repo_root(model_name: str) -> Path:
    # download only on the first process, the others wait and then resolve the cached path
    if rank == 0:
        snapshot_download(model_name)
    multihost_utils.sync_global_devices("get_repo_root")
    return snapshot_download(model_name)


def get_checkpoint_files(cached_repo_dir: Path):
    return sorted(str(p) for p in cached_repo_dir.rglob("*.bin") if p.is_file())


def write_checkpoints_json(repo_root: Path, checkpoints_json: Path):
    with open(checkpoints_json, "w") as f:
        json.dump({"type": "BLOOM", "checkpoints": get_checkpoint_files(repo_root), "version": 1.0}, f)


def init_inference(checkpoints_json: Path):
    files = json.loads(checkpoints_json.read_text())["checkpoints"]
    weights = np.concatenate([np.load(Path(f).read_text()) for f in files])
    local = weights.reshape(jax.process_count(), -1)[rank]  # tensor-parallel slice of this rank
    return multihost_utils.host_local_array_to_global_array(local, MESH, P("tp"))


@jax.jit
def generate_step(w):
    return jnp.sum(w * w), jnp.max(w)


def main():
    model_name = "bigscience/bloom-560m"
    checkpoints_json = CACHE / "checkpoints.json"
    repo_root = get_repo_root(model_name)
    if rank == 0:
        write_checkpoints_json(repo_root, checkpoints_json)
    multihost_utils.sync_global_devices("checkpoints_json_written")
    w = init_inference(checkpoints_json)
    norm, peak = generate_step(w)
    print(f"RESULT repo {repo_root.name}", flush=True)
    print(f"RESULT norm {float(norm):.3f} peak {float(peak):.3f}", flush=True)


if __name__ == "__main__":
    main()
