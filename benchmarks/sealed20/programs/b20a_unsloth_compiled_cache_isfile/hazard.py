# Patches a set of trainer classes by generating their source, caching it as a module in a shared
# compile cache and importing it back (as unsloth_zoo's create_new_function does). Under a
# distributed launch rank 0 writes each cache file and the ranks synchronize before importing.
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

COMPILE_LOCATION = Path(tempfile.gettempdir()) / "unsloth_compiled_cache" / os.environ.get("JOB_ID", "local")
TRAINERS = ["SFTTrainer", "DPOTrainer", "KTOTrainer", "ORPOTrainer", "GRPOTrainer", "RewardTrainer"]
HELPERS_PER_TRAINER = 1500


def generate_source(name, index):
    lines = ["import jax.numpy as jnp", ""]
    for i in range(HELPERS_PER_TRAINER):
        lines += [f"def _unsloth_{name.lower()}_helper_{i}(x):", f"    return x * {1.0 + i * 1e-6!r} + {i}", ""]
    lines += ["def compute_loss(params, x, y):",
              "    pred = jnp.tanh(x @ params['w'] + params['b'])",
              f"    return {1.0 + 0.1 * index!r} * jnp.mean((pred - y) ** 2)", ""]
    return "\n".join(lines)


def import_from_cache(name, path):
    spec = importlib.util.spec_from_file_location(f"unsloth_compiled_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verify_cached_source(path, source):
    cached = path.read_text()
    compile(cached, str(path), "exec")
    return hashlib.sha256(cached.encode()).hexdigest() == hashlib.sha256(source.encode()).hexdigest()


def create_new_function(name, source, rank):
    path = COMPILE_LOCATION / f"Unsloth{name}.py"
    if not os.path.isfile(path):
        if rank == 0:
            COMPILE_LOCATION.mkdir(parents=True, exist_ok=True)
            path.write_text(source)
        multihost_utils.sync_global_devices(f"unsloth_compiled_cache:{name}")
    if rank != 0 and not verify_cached_source(path, source):
        raise RuntimeError(f"Unsloth: compiled cache for {name} does not match the generated source")
    return import_from_cache(name, path)


def patch_trainers(rank):
    return {name: create_new_function(name, generate_source(name, i), rank) for i, name in enumerate(TRAINERS)}


def train(compute_loss, steps=8, lr=0.3):
    rng = np.random.default_rng(100 + jax.process_index())
    params = {"w": jnp.full((4, 1), 0.1), "b": jnp.zeros((1,))}
    grad_fn = jax.jit(jax.value_and_grad(compute_loss))
    for _ in range(steps):
        x = rng.normal(size=(32, 4)).astype(np.float32)
        y = np.tanh(x.sum(axis=1, keepdims=True) * 0.5).astype(np.float32)
        loss, grads = grad_fn(params, x, y)
        flat, unravel = jax.flatten_util.ravel_pytree(grads)
        mean = np.asarray(multihost_utils.process_allgather(np.asarray(flat))).mean(axis=0)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, unravel(jnp.asarray(mean)))
    losses = np.asarray(multihost_utils.process_allgather(np.float32(loss)))
    return params, float(losses.mean())


def main():
    rank = jax.process_index()
    modules = patch_trainers(rank)
    params, loss = train(modules["SFTTrainer"].compute_loss)
    print("RESULT patched_trainers", ",".join(sorted(modules)))
    print("RESULT final_loss", round(loss, 4))
    print("RESULT w_sum", round(float(jnp.sum(params["w"])), 4))


if __name__ == "__main__":
    main()
