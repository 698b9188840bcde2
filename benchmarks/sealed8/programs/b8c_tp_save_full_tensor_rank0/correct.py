# HF Trainer under tensor parallelism (fixed): every rank enters _save to gather shards; only rank 0 writes
# Source: https://github.com/huggingface/transformers/pull/48569 (port of a transformers /
# torch.distributed deadlock to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
TP_PLAN = {"q_proj": P(None, "tp"), "o_proj": P("tp", None), "norm": P()}


def full_tensor(x):
    """DTensor.full_tensor(): every rank of the mesh contributes its shard."""
    return np.asarray(jax.jit(lambda a: a, out_shardings=NamedSharding(MESH, P()))(x))


class TPModel:
    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        host = {"q_proj": rng.normal(size=(4, 8)), "o_proj": rng.normal(size=(8, 4)), "norm": np.ones(4)}
        self.params = {k: jax.device_put(jnp.asarray(v, jnp.float32), NamedSharding(MESH, TP_PLAN[k]))
                       for k, v in host.items()}

    def state_dict(self):
        return self.params

    def save_pretrained(self, save_directory: str, is_main_process: bool = True):
        state = {k: full_tensor(v) for k, v in sorted(self.state_dict().items())}
        if is_main_process:
            os.makedirs(save_directory, exist_ok=True)
            with open(os.path.join(save_directory, "model.json"), "w") as f:
                json.dump({k: v.tolist() for k, v in state.items()}, f)


@dataclass
class TrainingArguments:
    output_dir: str
    save_steps: int = 2

    @property
    def should_save(self) -> bool:
        return jax.process_index() == 0


@jax.jit
def _train_step(params, x):
    h = jnp.tanh(x @ params["q_proj"]) @ params["o_proj"] * params["norm"]
    return {k: v * 0.99 for k, v in params.items()}, jnp.mean(h ** 2)


class Trainer:
    def __init__(self, model: TPModel, args: TrainingArguments):
        self.model, self.args = model, args

    def _save(self, output_dir: str):
        self.model.save_pretrained(output_dir, is_main_process=self.args.should_save)

    def save_model(self, output_dir: str):
        # the gather inside save_pretrained is a collective: every rank calls _save, the write is gated
        self._save(output_dir)

    def train(self, steps: int):
        x = jnp.ones((2, 4), jnp.float32)
        losses = []
        for step in range(1, steps + 1):
            self.model.params, loss = _train_step(self.model.params, x)
            losses.append(round(float(loss), 5))
            if step % self.args.save_steps == 0:
                self.save_model(os.path.join(self.args.output_dir, f"checkpoint-{step}"))
        return losses


def main():
    out = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_tp_save", os.environ.get("JOB_ID", "local"))
    trainer = Trainer(TPModel(), TrainingArguments(output_dir=out))
    losses = trainer.train(steps=4)
    norm = full_tensor(trainer.model.params["q_proj"])
    print(f"RESULT losses {losses}", flush=True)
    print(f"RESULT q_norm {float(np.linalg.norm(norm)):.4f}", flush=True)


if __name__ == "__main__":
    main()
