# The lm1b training loop calls the multiprocess save on every process; the Orbax-style checkpointer
# decides inside which process writes, so its barriers are reached everywhere.
# Source: https://github.com/google/flax/commit/594b4529fa84bbbba5d5031d12968d355d03850f
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("batch",))
DATA = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())


class ConfigDict(dict):
    __getattr__ = dict.__getitem__


class Checkpointer:
    """Orbax-style: a tmp directory, a barrier, the primary commits, a final barrier."""

    def save(self, directory, item):
        tmp = directory + ".orbax-checkpoint-tmp"
        multihost_utils.sync_global_devices(f"Checkpointer:create_tmp:{os.path.basename(directory)}")
        if jax.process_index() == 0:
            os.makedirs(tmp, exist_ok=True)
            with open(os.path.join(tmp, "checkpoint"), "wb") as f:
                pickle.dump(item, f)
            os.replace(tmp, directory)
        multihost_utils.sync_global_devices(f"Checkpointer:finalize:{os.path.basename(directory)}")


class checkpoints:  # noqa: N801  (module-like namespace, as flax.training.checkpoints)
    @staticmethod
    def save_checkpoint(ckpt_dir, target, step, orbax_checkpointer=None):
        orbax_checkpointer = orbax_checkpointer or Checkpointer()
        orbax_checkpointer.save(os.path.join(ckpt_dir, f"checkpoint_{step}"), target)


def unreplicate(tree):
    return jax.tree.map(lambda a: np.asarray(a.addressable_data(0)), tree)


@jax.jit
def train_step(state, batch):
    loss_fn = lambda p: jnp.mean(jnp.square(batch @ p["kernel"] - 0.5))
    grads = jax.grad(loss_fn)(state["params"])
    params = jax.tree.map(lambda p, g: p - 0.1 * g, state["params"], grads)
    return {"params": params, "step": state["step"] + 1}


def train_and_evaluate(config, workdir):
    state = jax.device_put({"params": {"kernel": jnp.ones((3, 2))}, "step": jnp.zeros((), jnp.int32)}, REPL)
    rng = np.random.default_rng(jax.process_index())
    for step in range(1, config.num_train_steps + 1):
        batch = jax.make_array_from_process_local_data(DATA, rng.normal(size=(2, 3)).astype(np.float32))
        state = train_step(state, batch)
        is_last_step = step == config.num_train_steps
        save_checkpoint = step % config.checkpoint_every_steps == 0 or is_last_step
        if config.save_checkpoints and save_checkpoint:
            checkpoints.save_checkpoint(workdir, unreplicate(state), step)
    return state


config = ConfigDict(num_train_steps=5, checkpoint_every_steps=2, save_checkpoints=True)
workdir = os.path.join(tempfile.gettempdir(), f"b5a_lm1b_{os.environ.get('JOB_ID', 'local')}")
os.makedirs(workdir, exist_ok=True)
final = train_and_evaluate(config, workdir)
print("RESULT", int(final["step"]), round(float(jnp.sum(final["params"]["kernel"])), 5))
