# A benchmark run creates its workdir with tempfile.mkdtemp() on every process; the restore that
# decides the first step reads that per-process directory.
# Source: https://github.com/google/flax/issues/3364
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


class Config:
    num_train_steps = 6
    steps_per_checkpoint = 2
    learning_rate = 0.05


def save_checkpoint_multiprocess(ckpt_dir, target, step):
    """Every process enters; the primary writes the file, then all meet at the commit barrier."""
    multihost_utils.sync_global_devices("starting_save_checkpoint")
    if jax.process_index() == 0:
        host = jax.tree.map(lambda a: np.asarray(a.addressable_data(0)), target)
        with open(os.path.join(ckpt_dir, f"checkpoint_{step}"), "wb") as f:
            pickle.dump(host, f)
    multihost_utils.sync_global_devices("finished_save_checkpoint")


def restore_checkpoint(ckpt_dir, target):
    steps = sorted(int(n.split("_")[1]) for n in os.listdir(ckpt_dir) if n.startswith("checkpoint_"))
    if not steps:
        print("Found no checkpoint files in", ckpt_dir)
        return target, 0
    with open(os.path.join(ckpt_dir, f"checkpoint_{steps[-1]}"), "rb") as f:
        host = pickle.load(f)
    return jax.device_put(jax.tree.map(jnp.asarray, host), REPL), steps[-1]


@jax.jit
def train_step(params, batch):
    grads = jax.grad(lambda p: jnp.mean((batch @ p["w"] - 1.0) ** 2))(params)
    return jax.tree.map(lambda p, g: p - Config.learning_rate * g, params, grads)


def train_and_evaluate(config, workdir, stop_after=None):
    params = jax.device_put({"w": jnp.zeros((4, 1))}, REPL)
    params, step_offset = restore_checkpoint(workdir, params)
    rng = np.random.default_rng(100 + jax.process_index())
    last = config.num_train_steps if stop_after is None else stop_after
    for step in range(step_offset, last):
        local = rng.normal(size=(2, 4)).astype(np.float32)
        params = train_step(params, jax.make_array_from_process_local_data(DATA, local))
        if (step + 1) % config.steps_per_checkpoint == 0:
            save_checkpoint_multiprocess(workdir, params, step + 1)
    return params


class ImagenetBenchmark:
    def setUp(self):
        self.workdir = tempfile.mkdtemp()

    def test_preempted_then_resumed(self):
        train_and_evaluate(Config, self.workdir, stop_after=3)   # preempted after step 3
        return train_and_evaluate(Config, self.workdir)          # resumed from the latest checkpoint


bench = ImagenetBenchmark()
bench.setUp()
final = bench.test_preempted_then_resumed()
print("RESULT", round(float(jnp.sum(final["w"])), 5))
