# The trainer saves only on the master; the DeepSpeed-style checkpointer it delegates to has a barrier inside
# Source: https://github.com/allenai/allennlp/pull/4693
# Written for the mcjax sealed4 evaluation (not copied): a port of an AllenNLP + DeepSpeed (torch.distributed) bug
# to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("zero",))
PARTITIONED = NamedSharding(MESH, P("zero"))
SERIALIZATION_DIR = os.path.join(tempfile.gettempdir(), "mcjax_b4c_allennlp", os.environ.get("JOB_ID", "local"))


class DeepspeedEngine:
    """ZeRO-style engine: the optimizer state is partitioned across ranks."""

    def __init__(self, params):
        self.global_rank = jax.process_index()
        self.params = params
        self.exp_avg = jax.device_put(jnp.zeros_like(params), PARTITIONED)

    def step(self, grads):
        self.exp_avg, self.params = _adam_like(self.exp_avg, self.params, grads)

    def save_checkpoint(self, save_dir, tag):
        os.makedirs(os.path.join(save_dir, tag), exist_ok=True)
        for shard in self.exp_avg.addressable_shards:  # each rank writes its own partition
            np.save(os.path.join(save_dir, tag, f"zero_pp_rank_{self.global_rank}_optim_states.npy"), np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"save_checkpoint_{tag}")  # dist.barrier()
        if self.global_rank == 0:
            with open(os.path.join(save_dir, "latest"), "w") as f:
                f.write(tag)


@jax.jit
def _adam_like(m, p, g):
    m = 0.9 * m + 0.1 * g
    return m, p - 0.05 * m


class Checkpointer:
    def __init__(self, serialization_dir):
        self._serialization_dir = serialization_dir

    def call_on_rank(self, rank):
        return rank == 0

    def save_checkpoint(self, epoch, trainer):
        os.makedirs(self._serialization_dir, exist_ok=True)
        with open(os.path.join(self._serialization_dir, f"training_state_epoch_{epoch}.json"), "w") as f:
            json.dump({"epoch": epoch}, f)


class DeepspeedCheckpointer(Checkpointer):
    def call_on_rank(self, rank):
        return True  # the engine's save has collectives: every rank must enter it

    def save_checkpoint(self, epoch, trainer):
        super().save_checkpoint(epoch, trainer)
        trainer.model_engine.save_checkpoint(self._serialization_dir, f"epoch_{epoch}")


class DeepspeedTrainer:
    def __init__(self, model_engine, checkpointer, num_epochs):
        self.model_engine = model_engine
        self._checkpointer = checkpointer
        self._num_epochs = num_epochs
        self._rank = jax.process_index()
        self._master = self._rank == 0

    def _train_epoch(self, epoch):
        local = np.linspace(-1, 1, 8, dtype=np.float32) * (epoch + 1 + self._rank)
        batch = jax.make_array_from_process_local_data(PARTITIONED, local)
        grads = _grad(self.model_engine.params, batch)
        self.model_engine.step(grads)
        return float(jnp.sum(grads))

    def train(self):
        metrics = []
        for epoch in range(self._num_epochs):
            metrics.append(self._train_epoch(epoch))
            if self._checkpointer is not None and self._checkpointer.call_on_rank(self._rank):
                self._checkpointer.save_checkpoint(epoch, self)
        return metrics


@jax.jit
def _grad(params, batch):
    return jax.grad(lambda p: jnp.sum((p - batch) ** 2))(params)


engine = DeepspeedEngine(jax.device_put(jnp.ones((16,), jnp.float32), PARTITIONED))
trainer = DeepspeedTrainer(engine, DeepspeedCheckpointer(SERIALIZATION_DIR), num_epochs=3)
metrics = trainer.train()
print("RESULT metrics", [round(m, 3) for m in metrics])
print("RESULT params", round(float(jnp.sum(engine.params)), 4))
