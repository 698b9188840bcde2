# Trainer.save_model with a fully-sharded model: the state_dict consolidation is a collective, called on process zero only
# Source: https://github.com/huggingface/transformers/pull/10596 (port of the fairscale FSDP save hang to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TrainingArguments:
    output_dir: str
    max_steps: int = 6
    save_steps: int = 3
    learning_rate: float = 0.1
    per_device_batch: int = 4


class FullyShardedModel:
    """Parameters live sharded over the data-parallel mesh, as with fairscale's FullyShardedDataParallel."""

    def __init__(self, mesh, dims=(8, 4)):
        self.mesh = mesh
        rng = np.random.default_rng(7)
        full = {"w": rng.normal(size=dims).astype(np.float32), "b": np.zeros((dims[0],), np.float32)}
        self.params = {k: jax.device_put(v, NamedSharding(mesh, P("dp"))) for k, v in full.items()}
        self._gather = jax.jit(lambda p: p, out_shardings=NamedSharding(mesh, P()))

    def state_dict(self):
        # consolidating the full parameters needs every shard: an all-gather over the mesh
        return {k: np.asarray(self._gather(v)) for k, v in self.params.items()}


class Trainer:
    def __init__(self, model: FullyShardedModel, args: TrainingArguments):
        self.model, self.args = model, args
        self.repl = NamedSharding(model.mesh, P())
        self._step = jax.jit(self._train_step, out_shardings=(NamedSharding(model.mesh, P("dp")), self.repl))

    def is_world_process_zero(self):
        return jax.process_index() == 0

    @staticmethod
    def _train_step(params, x, lr):
        def loss_fn(p):
            return jnp.mean((jnp.tanh(x @ p["w"].T + p["b"]).sum(axis=1) - 1.0) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    def _save(self, output_dir, state_dict=None):
        state_dict = self.model.state_dict() if state_dict is None else state_dict
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(output_dir, "pytorch_model.bin"), "wb") as f:
            pickle.dump(state_dict, f)

    def save_model(self, output_dir):
        # gather the state dict on all processes (the consolidation synchronises them), save it on process zero
        state_dict = self.model.state_dict()
        if self.is_world_process_zero():
            self._save(output_dir, state_dict=state_dict)

    def train(self, batches):
        loss = None
        for step in range(1, self.args.max_steps + 1):
            x = jax.make_array_from_process_local_data(NamedSharding(self.model.mesh, P("dp")), next(batches))
            params, loss = self._step(self.model.params, x, self.args.learning_rate)
            self.model.params = params
            if step % self.args.save_steps == 0:
                self.save_model(os.path.join(self.args.output_dir, f"checkpoint-{step}"))
        return float(loss)


def batch_stream(per_device_batch, dim=4):
    rng = np.random.default_rng(11 + jax.process_index())
    while True:
        yield rng.normal(size=(per_device_batch, dim)).astype(np.float32)


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    out = os.path.join(tempfile.gettempdir(), f"fsdp_save_{os.environ.get('JOB_ID', 'local')}_{jax.process_index()}")
    args = TrainingArguments(output_dir=out)
    trainer = Trainer(FullyShardedModel(mesh), args)
    loss = trainer.train(batch_stream(args.per_device_batch))
    print("RESULT final_loss", round(loss, 5))
    print("RESULT w_norm", round(float(jnp.linalg.norm(trainer.model.state_dict()["w"])), 5))


if __name__ == "__main__":
    main()
