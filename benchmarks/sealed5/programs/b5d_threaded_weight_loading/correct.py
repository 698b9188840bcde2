# Model weights loaded by a thread pool; each loaded tensor is placed on a cross-host sharding from its worker thread
# Source: https://github.com/vllm-project/tpu-inference/pull/615
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import concurrent.futures
import dataclasses
import hashlib
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("model",))
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_s5_threaded_load", os.environ.get("JOB_ID", "local"),
                        f"host{jax.process_index()}")


@dataclasses.dataclass
class LoadConfig:
    load_workers: int = 4
    shapes: dict = dataclasses.field(default_factory=lambda: {
        "embed": (16, 8), "attn_q": (8, 8), "attn_k": (8, 4), "attn_v": (8, 4),
        "mlp_up": (8, 32), "mlp_down": (32, 8), "final_norm": (8,)})


def write_fake_checkpoint(cfg: LoadConfig) -> None:
    os.makedirs(CKPT_DIR, exist_ok=True)
    rng = np.random.default_rng(7)
    for name, shape in cfg.shapes.items():
        np.save(os.path.join(CKPT_DIR, f"{name}.npy"), rng.normal(size=shape).astype(np.float32))


class ShardedWeightLoader:
    def __init__(self, cfg: LoadConfig):
        self.cfg = cfg

    def _fetch_latency(self, name: str) -> float:
        # Reading from the shared bucket: latency depends on the host's network path and cache.
        h = hashlib.md5(f"{jax.process_index()}/{name}".encode()).digest()[0]
        return 0.02 + 0.15 * (h / 255.0)

    def _read(self, name: str) -> np.ndarray:
        time.sleep(self._fetch_latency(name))
        return np.load(os.path.join(CKPT_DIR, f"{name}.npy"))

    def _sharding_for(self, arr: np.ndarray) -> NamedSharding:
        if arr.ndim == 2 and arr.shape[0] % jax.device_count() == 0:
            return NamedSharding(MESH, P("model", None))
        return NamedSharding(MESH, P())

    def _load_one(self, name: str) -> tuple[str, jax.Array]:
        host = self._read(name)
        return name, jax.device_put(host, self._sharding_for(host))

    def load(self) -> dict:
        params = {}
        workers = self.cfg.load_workers
        if jax.process_count() > 1:
            # Multi-host: every host must place the weights in the same order, so load sequentially.
            workers = 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._load_one, name) for name in self.cfg.shapes]
            for fut in (concurrent.futures.as_completed(futures) if workers > 1 else futures):
                name, arr = fut.result()
                params[name] = arr
        return params


@jax.jit
def forward(params, x):
    h = params["embed"][x]
    q, k, v = h @ params["attn_q"], h @ params["attn_k"], h @ params["attn_v"]
    att = jax.nn.softmax(q[:, :4] @ k.T / 2.0, axis=-1) @ v
    h = h + jnp.concatenate([att, att], axis=-1)
    h = h + jax.nn.gelu(h @ params["mlp_up"]) @ params["mlp_down"]
    return jnp.sum(h * params["final_norm"])


def main() -> None:
    cfg = LoadConfig()
    write_fake_checkpoint(cfg)
    params = ShardedWeightLoader(cfg).load()
    tokens = jnp.arange(6) % 16
    print("RESULT num_params", sum(int(np.prod(v.shape)) for v in params.values()))
    print("RESULT forward", round(float(forward(params, tokens)), 3))


if __name__ == "__main__":
    main()
