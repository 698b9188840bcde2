# PPO stats logging gathers the batch of samples for the W&B table inside the main-process-only block
# Source: https://github.com/huggingface/trl/issues/1103
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

LOG_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_logged_samples_gather_main_only",
                       os.environ.get("JOB_ID", "local"))
CONFIG = {"ppo_epochs": 3, "batch_per_host": 4, "log_with": "wandb", "lr": 0.02}


class LocalTracker:
    """Stands in for the W&B run: one JSON line per log call, written by the main process."""

    def __init__(self):
        os.makedirs(LOG_DIR, exist_ok=True)
        self.path = os.path.join(LOG_DIR, "wandb_history.jsonl")

    def log(self, row):
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")


class PPOTrainer:
    def __init__(self, config):
        self.config = config
        self.is_main_process = jax.process_index() == 0
        self.mesh = jax.make_mesh((jax.device_count(),), ("dp",))
        self.dp = NamedSharding(self.mesh, P("dp"))
        self.repl = NamedSharding(self.mesh, P())
        self.value_head = jax.device_put(jnp.full((4,), 0.5, jnp.float32), self.repl)
        self.tracker = LocalTracker() if self.is_main_process else None
        self._step = jax.jit(self._ppo_step, out_shardings=(self.repl, self.repl))

    def _ppo_step(self, head, rewards):
        advantage = rewards - jnp.mean(rewards)
        new_head = head + self.config["lr"] * jnp.mean(advantage ** 2) * jnp.sign(head)
        return new_head, jnp.mean(rewards)

    def step(self, epoch):
        n = self.config["batch_per_host"]
        local_rewards = np.linspace(0.0, 1.0, n, dtype=np.float32) * (epoch + 1) + jax.process_index()
        rewards = jax.make_array_from_process_local_data(self.dp, local_rewards)
        self.value_head, mean_reward = self._step(self.value_head, rewards)
        return {"env/reward_mean": float(mean_reward)}, {"query_id": local_rewards * 0 + epoch,
                                                          "reward": local_rewards}

    def log_stats(self, stats, batch):
        if self.is_main_process:
            table_rows = multihost_utils.process_allgather(batch)
            stats["game_log_rows"] = int(table_rows["reward"].size)
            self.tracker.log(stats)
        return stats


def main():
    trainer = PPOTrainer(CONFIG)
    for epoch in range(CONFIG["ppo_epochs"]):
        stats, batch = trainer.step(epoch)
        trainer.log_stats(stats, batch)
    head_sum = jax.jit(jnp.sum, out_shardings=trainer.repl)(trainer.value_head)
    print("RESULT reward_mean", round(stats["env/reward_mean"], 5))
    print("RESULT value_head_sum", round(float(head_sum), 5))


main()
