# The master's 'experiment already exists' decision is broadcast, so every process returns early together
# Source: https://github.com/YalaLab/pillar-pretrain/issues/4
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
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

LOG_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_existing_run_dir_master_exit",
                        os.environ.get("JOB_ID", "local"))
ARGS = {"name": "pillar-ct-pretrain", "epochs": 2, "steps_per_epoch": 3, "lr": 0.1}


def is_master():
    return jax.process_index() == 0


def setup_experiment(args):
    """Creates the run directory on the master; refuses to overwrite an existing experiment."""
    run_dir = os.path.join(LOG_ROOT, args["name"])
    exists = np.array([is_master() and os.path.exists(run_dir)], np.int32)
    if int(multihost_utils.broadcast_one_to_all(exists)[0]):
        print(f"experiment {args['name']} already exists at {run_dir}, refusing to overwrite")
        return None
    if is_master():
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "args.json"), "w") as f:
            json.dump(args, f)
    return run_dir


def train(args, run_dir):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    repl = NamedSharding(mesh, P())
    w = jax.device_put(jnp.ones((3,), jnp.float32), repl)

    @jax.jit
    def step(w, x):
        loss_grad = jnp.mean(x) * w
        return w - args["lr"] * loss_grad, jnp.sum(w * w)

    loss = None
    for epoch in range(args["epochs"]):
        for it in range(args["steps_per_epoch"]):
            local = np.full((4,), 0.05 * (it + 1) + 0.01 * jax.process_index(), np.float32)
            w, loss = step(w, jax.make_array_from_process_local_data(data_sharding, local))
        if is_master():
            with open(os.path.join(run_dir, "log.txt"), "a") as f:
                f.write(f"epoch {epoch} loss {float(loss):.5f}\n")
    return float(loss)


def main(args):
    run_dir = setup_experiment(args)
    if run_dir is None:
        return -1
    loss = train(args, run_dir)
    multihost_utils.sync_global_devices("training done")
    return loss


if __name__ == "__main__":
    first = main(ARGS)            # the first launch creates the experiment
    print("RESULT first_launch", round(first, 5))
    second = main(ARGS)           # relaunched with the same experiment name
    print("RESULT second_launch", second if second == -1 else round(second, 5))
