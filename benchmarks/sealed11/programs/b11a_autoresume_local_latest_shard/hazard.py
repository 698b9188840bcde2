# Autoresume picks each rank's own newest checkpoint shard, so a rank whose last save failed resumes from an older step
# Source: https://github.com/mosaicml/composer/pull/2146
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import glob
import json
import os
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SAVE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_autoresume_local_latest_shard",
                        os.environ.get("JOB_ID", "local"))
NODE_DISK_QUOTA_BYTES = [1 << 20, 160]   # the second node's scratch disk is nearly full
SAVE_INTERVAL, CRASH_AT, MAX_DURATION = 2, 4, 6


class ShardedCheckpointer:
    def __init__(self, rank):
        self.rank = rank
        os.makedirs(SAVE_DIR, exist_ok=True)

    def path(self, step):
        return os.path.join(SAVE_DIR, f"ep0-ba{step}-rank{self.rank}.json")

    def save(self, step, shard, history):
        payload = json.dumps({"timestamp": step, "shard": shard.tolist(), "history": history})
        if len(payload) > NODE_DISK_QUOTA_BYTES[self.rank]:
            raise OSError(28, "No space left on device", self.path(step))
        with open(self.path(step), "w") as f:
            f.write(payload)

    def latest_local_step(self):
        steps = [int(re.search(r"-ba(\d+)-", p).group(1))
                 for p in glob.glob(os.path.join(SAVE_DIR, f"ep0-ba*-rank{self.rank}.json"))]
        return max(steps) if steps else 0

    def load(self, step):
        with open(self.path(step)) as f:
            state = json.load(f)
        return state["timestamp"], np.asarray(state["shard"], np.float32), state["history"]


class Trainer:
    def __init__(self, autoresume):
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.sharding = NamedSharding(self.mesh, P("data"))
        self.rank = jax.process_index()
        self.ckpt = ShardedCheckpointer(self.rank)
        self.timestamp, self.history = 0, []
        shard = np.ones((2,), np.float32)
        if autoresume:
            step = self.ckpt.latest_local_step()
            if step:
                self.timestamp, shard, self.history = self.ckpt.load(step)
        self.params = jax.make_array_from_process_local_data(self.sharding, shard)
        if autoresume:
            multihost_utils.sync_global_devices("autoresume: shards loaded")
        self._step = jax.jit(lambda p: p * (1.0 - 0.1 * jnp.mean(p)), out_shardings=self.sharding)

    def fit(self, until):
        while self.timestamp < until:
            self.params = self._step(self.params)
            self.timestamp += 1
            self.history.append({"batch": self.timestamp, "p0": round(float(self.params.addressable_data(0)[0]), 4)})
            if self.timestamp % SAVE_INTERVAL == 0:
                try:
                    self.ckpt.save(self.timestamp, np.asarray(self.params.addressable_data(0)), self.history)
                except OSError as err:
                    print(f"rank {self.rank}: checkpoint save at batch {self.timestamp} failed: {err}")


def main():
    Trainer(autoresume=False).fit(until=CRASH_AT)      # the job is preempted after batch 4
    trainer = Trainer(autoresume=True)
    trainer.fit(until=MAX_DURATION)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(trainer.mesh, P()))(trainer.params)
    print("RESULT timestamp", trainer.timestamp)
    print("RESULT params_sum", round(float(total), 5))


main()
