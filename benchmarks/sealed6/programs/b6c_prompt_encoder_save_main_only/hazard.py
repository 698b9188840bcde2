# Prompt tuning under fully sharded parameters: save_pretrained runs the prompt encoder forward, but only the main process saves
# Source: https://github.com/huggingface/transformers/pull/29980 (port of the prompt tuning + ZeRO-3 checkpoint-saving hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp", None))   # ZeRO-3 style: each process holds a slice of every parameter
REPLICATED = NamedSharding(MESH, P())


@dataclasses.dataclass
class PromptTuningConfig:
    num_virtual_tokens: int = 4
    token_dim: int = 6
    encoder_hidden: int = 8


class PromptEncoder:
    """Reparameterizes the virtual token embeddings through a small MLP (P-tuning)."""

    def __init__(self, cfg: PromptTuningConfig, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.params = {
            "embedding": jax.device_put(rng.normal(size=(cfg.num_virtual_tokens, cfg.token_dim)).astype(np.float32), SHARDED),
            "mlp": jax.device_put(0.3 * rng.normal(size=(cfg.token_dim, cfg.token_dim)).astype(np.float32), SHARDED),
        }
        self._forward = jax.jit(self.apply, out_shardings=REPLICATED)

    @staticmethod
    def apply(params):
        return params["embedding"] + jnp.tanh(params["embedding"] @ params["mlp"])

    def __call__(self):
        return self._forward(self.params)


class PeftModel:
    def __init__(self, cfg: PromptTuningConfig):
        self.cfg = cfg
        self.prompt_encoder = PromptEncoder(cfg)

    def get_prompt_embedding_to_save(self) -> np.ndarray:
        # the saved prompt is the encoder *output*, which needs the full (gathered) parameters
        return np.asarray(self.prompt_encoder().addressable_data(0))

    def save_pretrained(self, save_directory: str, is_main_process: bool = True):
        prompt = self.get_prompt_embedding_to_save()
        if is_main_process:
            os.makedirs(save_directory, exist_ok=True)
            np.save(os.path.join(save_directory, "adapter_model.npy"), prompt)


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        prompt = PromptEncoder.apply(p)
        return jnp.mean((x @ prompt.T - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


class Trainer:
    def __init__(self, model: PeftModel, output_dir: str, max_steps: int = 6, save_steps: int = 2):
        self.model, self.output_dir = model, output_dir
        self.max_steps, self.save_steps = max_steps, save_steps
        self.should_save = jax.process_index() == 0
        self.rng = np.random.default_rng(11 + jax.process_index())

    def _save(self, step: int):
        if self.should_save:
            self.model.save_pretrained(os.path.join(self.output_dir, f"checkpoint-{step}"))

    def train(self) -> float:
        batch = NamedSharding(MESH, P("fsdp"))
        cfg = self.model.cfg
        for step in range(1, self.max_steps + 1):
            x = self.rng.normal(size=(2, cfg.token_dim)).astype(np.float32)
            y = np.ones((2, cfg.num_virtual_tokens), np.float32)
            enc = self.model.prompt_encoder
            enc.params, loss = train_step(enc.params, jax.make_array_from_process_local_data(batch, x),
                                          jax.make_array_from_process_local_data(batch, y))
            if step % self.save_steps == 0:
                self._save(step)
        return float(loss)


def main():
    model = PeftModel(PromptTuningConfig())
    loss = Trainer(model, tempfile.mkdtemp(prefix="peft_ckpt_")).train()
    print("RESULT loss", round(loss, 4))
    print("RESULT prompt", np.round(model.get_prompt_embedding_to_save(), 3).sum(axis=1).tolist())


if __name__ == "__main__":
    main()
