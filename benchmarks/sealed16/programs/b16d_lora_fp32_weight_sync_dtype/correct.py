# PPO weight sync to a rollout engine: the trainer casts each gathered parameter to the engine dtype before broadcasting
# Source: https://github.com/OpenRLHF/OpenRLHF/pull/1348
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ENGINE_DTYPE = jnp.bfloat16   # the rollout engines are created in bf16


@dataclass
class TrainConfig:
    param_dtype: str = "float16"   # --param_dtype fp16 for the trainer's base weights


@dataclass
class ModelSpec:
    hidden: int = 8
    lora_rank: int = 2

    def param_shapes(self):
        h, r = self.hidden, self.lora_rank
        return {"q_proj.weight": (h, h), "q_proj.lora_A": (r, h), "q_proj.lora_B": (h, r),
                "v_proj.weight": (h, h), "v_proj.lora_A": (r, h), "v_proj.lora_B": (h, r)}


class PPOActor:
    """Trainer side (process 0): base weights in param_dtype, LoRA adapters upcast to fp32 by the adapter library."""

    def __init__(self, spec, cfg):
        rng = np.random.default_rng(3)
        self.params = {}
        for name, shape in spec.param_shapes().items():
            dtype = np.float32 if "lora" in name else np.dtype(cfg.param_dtype)
            self.params[name] = (rng.normal(size=shape) * 0.1).astype(dtype)

    def train_step(self, step):
        for name in self.params:
            if "lora" in name:
                self.params[name] = (self.params[name] * 0.9 + 0.01 * (step + 1)).astype(np.float32)

    def gathered_param(self, name):
        return self.params[name].astype(ENGINE_DTYPE)  # one dtype on both sides of the broadcast


class RolloutEngine:
    """Inference side: holds its weights in the engine dtype and receives every sync into a matching buffer."""

    def __init__(self, spec):
        self.weights = {n: np.zeros(s, ENGINE_DTYPE) for n, s in spec.param_shapes().items()}

    def recv_buffer(self, name):
        return np.zeros_like(self.weights[name])

    def load(self, name, value):
        self.weights[name] = np.asarray(value).astype(ENGINE_DTYPE)

    def checksum(self):
        return float(sum(np.abs(np.asarray(w, np.float32)).sum() for w in self.weights.values()))


def broadcast_to_vllm(actor, engine, spec, is_trainer):
    for name in spec.param_shapes():
        buf = actor.gathered_param(name) if is_trainer else engine.recv_buffer(name)
        synced = multihost_utils.broadcast_one_to_all(buf)
        engine.load(name, synced)


def main():
    spec = ModelSpec()
    is_trainer = jax.process_index() == 0
    actor = PPOActor(spec, TrainConfig()) if is_trainer else None
    engine = RolloutEngine(spec)
    sums = []
    for step in range(2):
        if is_trainer:
            actor.train_step(step)
        broadcast_to_vllm(actor, engine, spec, is_trainer)
        sums.append(round(engine.checksum(), 3))
    multihost_utils.sync_global_devices("weights synced")
    print("RESULT engine_weight_checksums", sums)


if __name__ == "__main__":
    main()
