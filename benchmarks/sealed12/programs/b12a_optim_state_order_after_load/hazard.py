# After a checkpoint load the optimizer-state dict order differs per host; the full-state save gathers in that order
# Source: https://github.com/pytorch/pytorch/pull/84654
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

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_optim_state_order_after_load",
                        os.environ.get("JOB_ID", "local"))
PARAM_SHAPES = {"embed": (4,), "head": (2,)}     # global shapes, sharded over hosts (FSDP-style)
PRIMARY_OWNER = {"embed": 0, "head": 1}          # which host is primary for a param's state file


class ShardedMomentum:
    def __init__(self):
        self.rank = jax.process_index()
        self.state = {}                        # name -> {"momentum_buffer": local shard}

    def update(self, name, local_grad):
        entry = self.state.setdefault(name, {"momentum_buffer": np.zeros_like(local_grad)})
        entry["momentum_buffer"] = 0.9 * entry["momentum_buffer"] + local_grad
        return entry["momentum_buffer"]

    def save_local(self, step):
        os.makedirs(CKPT_DIR, exist_ok=True)
        for kind in ("primary", "replica"):
            part = {k: v["momentum_buffer"].tolist() for k, v in self.state.items()
                    if (PRIMARY_OWNER[k] == self.rank) == (kind == "primary")}
            with open(os.path.join(CKPT_DIR, f"optim_{kind}_rank{self.rank}_step{step}.json"), "w") as f:
                json.dump(part, f)

    def load_local(self, step):
        self.state = {}
        for kind in ("primary", "replica"):     # this host's primary states first, then the rest
            with open(os.path.join(CKPT_DIR, f"optim_{kind}_rank{self.rank}_step{step}.json")) as f:
                for k, v in json.load(f).items():
                    self.state[k] = {"momentum_buffer": np.asarray(v, np.float32)}

    def full_optim_state_dict(self):
        """Unflattens the sharded state: one all-gather per parameter state, in dict order."""
        full = {}
        for name, entry in self.state.items():
            full[name] = multihost_utils.process_allgather(entry["momentum_buffer"], tiled=True)
        return full


class Trainer:
    def __init__(self):
        mesh = jax.make_mesh((jax.device_count(),), ("fsdp",))
        self.sharding = NamedSharding(mesh, P("fsdp"))
        self.params = {k: jax.make_array_from_process_local_data(
            self.sharding, np.full((s[0] // 2,), 0.5 + 0.25 * jax.process_index(), np.float32))
            for k, s in PARAM_SHAPES.items()}
        self.grad = jax.jit(lambda p: jnp.tanh(p) * jnp.mean(p), out_shardings=self.sharding)
        self.optim = ShardedMomentum()

    def train_step(self):
        for name in PARAM_SHAPES:
            g = self.grad(self.params[name])
            buf = self.optim.update(name, np.asarray(g.addressable_data(0)))
            local = np.asarray(self.params[name].addressable_data(0)) - 0.1 * buf
            self.params[name] = jax.make_array_from_process_local_data(self.sharding, local)


def main():
    trainer = Trainer()
    for _ in range(2):
        trainer.train_step()
    trainer.optim.save_local(step=2)
    trainer.optim.load_local(step=2)            # resume: state restored from this host's files
    trainer.train_step()
    full = trainer.optim.full_optim_state_dict()
    for name in sorted(full):
        print("RESULT momentum", name, [round(float(x), 5) for x in np.asarray(full[name])])


main()
