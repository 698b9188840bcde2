# Only the download runs under Accelerator.main_process_first(); ZeRO-3 construction on every rank
# Source: https://github.com/huggingface/accelerate/issues/3709
# Port to multi-process JAX of an HF Accelerate + DeepSpeed ZeRO-3 hang at model loading.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import tempfile
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("fsdp",))
CACHE = os.path.join(tempfile.gettempdir(), f"b5c_hub_cache_{os.environ.get('JOB_ID', '0')}")


class Accelerator:
    def __init__(self, zero_stage: int = 3):
        self.zero_stage = zero_stage
        self.is_main_process = jax.process_index() == 0

    def wait_for_everyone(self):
        multihost_utils.sync_global_devices("accelerate.wait_for_everyone")

    @contextmanager
    def main_process_first(self):
        if not self.is_main_process:
            self.wait_for_everyone()
        yield
        if self.is_main_process:
            self.wait_for_everyone()


def _download(repo_id: str) -> str:
    path = os.path.join(CACHE, repo_id.replace("/", "--") + ".npy")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        weights = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
        np.save(path + ".tmp.npy", weights)
        os.replace(path + ".tmp.npy", path)
    return path


class TinyCausalLM:
    @classmethod
    def from_pretrained(cls, repo_id: str, accelerator: Accelerator) -> "TinyCausalLM":
        weights = np.load(_download(repo_id))
        self = cls()
        if accelerator.zero_stage == 3:
            # zero.Init: rank 0's copy is broadcast, then partitioned over the ranks
            weights = multihost_utils.broadcast_one_to_all(weights)
            self.w = jax.make_array_from_callback(
                weights.shape, NamedSharding(MESH, P("fsdp")), lambda idx: weights[idx])
        else:
            self.w = jnp.asarray(weights)
        return self


@jax.jit
def logits_norm(w):
    return jnp.sqrt(jnp.sum(w * w))


accelerator = Accelerator(zero_stage=3)
with accelerator.main_process_first():
    _download("Qwen/Qwen2.5-0.5B-Instruct")  # only the hub download is ordered; no collective inside
model = TinyCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct", accelerator)
print(f"Model loaded on process {jax.process_index()}", flush=True)
norm = float(logits_norm(model.w))
print("RESULT norm", round(norm, 4))
