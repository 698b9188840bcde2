# Parameters loaded by a thread pool are taken from the `done` set of futures, then placed on the mesh in that order
# Source: https://github.com/METR/inspect-action/pull/606
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import concurrent.futures
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("model",))
REPL = NamedSharding(MESH, P())
PARAM_SHAPES = {"embed": (16, 4), "attn.q": (4, 4), "attn.k": (4, 4), "attn.v": (4, 4),
                "mlp.up": (4, 8), "mlp.down": (8, 4), "norm.scale": (4,), "head": (4, 16)}


def read_param(name: str, lock: threading.Lock) -> tuple[str, np.ndarray]:
    with lock:  # the reader shares one file handle per checkpoint
        seed = sum(ord(c) for c in name)
    return name, np.random.default_rng(seed).normal(size=PARAM_SHAPES[name]).astype(np.float32)


def load_with_locks(names: list[str]) -> list[tuple[str, np.ndarray]]:
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as executor:
        futures = [executor.submit(read_param, name, lock) for name in names]
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        excs = [exc for future in done if (exc := future.exception()) is not None]
        if excs:
            raise ExceptionGroup("Failed to load", excs)
        return [f.result() for f in done]


@jax.jit
def param_norm(x):
    return jnp.sqrt(jnp.sum(x * x))


restored = {}
norms = []
for name, value in load_with_locks(list(PARAM_SHAPES)):
    restored[name] = jax.device_put(value, REPL)
    norms.append((name, round(float(param_norm(restored[name])), 4)))

print("RESULT", sorted(norms))
