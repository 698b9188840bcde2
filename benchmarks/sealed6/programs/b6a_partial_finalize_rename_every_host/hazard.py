# Every process runs the finalize of a partial checkpoint: exists-checks then os.rename of the shared
# directory. The first process renames it; the others then see the final path and raise.
# Source: https://github.com/google/orbax/commit/6129a7777c1577d8f18477535f2cae769c94debe
#   ("Make `ocp.partial.finalize` work properly in multi-host environments.")
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
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

PARTIAL_SAVE_SUFFIX = ".partial_save"


def _add_partial_save_suffix(path):
  return path.parent / (path.name + PARTIAL_SAVE_SUFFIX)


def _is_partial_save_path(path):
  return path.name.endswith(PARTIAL_SAVE_SUFFIX)


def _remove_partial_save_suffix(path):
  return path.parent / path.name[: -len(PARTIAL_SAVE_SUFFIX)]


def save_pytree(path, pytree):
  """Partial save: every process writes its addressable shards under <path>.partial_save."""
  partial_path = _add_partial_save_suffix(Path(path))
  if jax.process_index() == 0:
    partial_path.mkdir(parents=True, exist_ok=True)
  multihost_utils.sync_global_devices("partial_save:mkdir")
  for name, arr in pytree.items():
    for shard in arr.addressable_shards:
      start = shard.index[0].start or 0
      np.save(partial_path / f"{name}.{start}.npy", np.asarray(shard.data))
  if jax.process_index() == 0:
    (partial_path / "_METADATA").write_text(json.dumps({k: list(v.shape) for k, v in pytree.items()}))
  multihost_utils.sync_global_devices("partial_save:write")


def finalize(path):
  """Finalizes a partial save, making the checkpoint available at `path`."""
  path = Path(path)
  if _is_partial_save_path(path):
    final_path = _remove_partial_save_suffix(path)
  else:
    final_path = path
    path = _add_partial_save_suffix(path)

  if final_path.exists():
    raise FileExistsError(f"Finalized checkpoint already exists at {path}.")
  if not path.exists():
    raise FileNotFoundError(f"Partial save path {path} does not exist.")
  os.rename(path, final_path)


def load_pytree(path, mesh):
  path = Path(path)
  shapes = json.loads((path / "_METADATA").read_text())
  out = {}
  for name, shape in shapes.items():
    sharding = NamedSharding(mesh, P("data"))
    rows = shape[0] // jax.process_count()
    local = np.load(path / f"{name}.{rows * jax.process_index()}.npy")
    out[name] = jax.make_array_from_process_local_data(sharding, local, tuple(shape))
  return out


def main():
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  sharding = NamedSharding(mesh, P("data"))
  w = jax.make_array_from_process_local_data(sharding, np.arange(3, dtype=np.float32) + 3 * jax.process_index())
  ckpt = Path(tempfile.gettempdir()) / f"b6a_partial_{os.environ.get('JOB_ID', 'local')}" / "ckpt_10"
  save_pytree(ckpt, {"w": w})
  finalize(ckpt)
  restored = load_pytree(ckpt, mesh)
  total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(restored["w"])
  print(f"RESULT restored_shape={restored['w'].shape}")
  print(f"RESULT restored_sum={float(total):.1f}")


if __name__ == "__main__":
  main()
