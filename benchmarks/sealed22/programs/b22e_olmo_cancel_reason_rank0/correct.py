import logging
import os
import time
from dataclasses import dataclass
from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
log = logging.getLogger("olmo.train")


@dataclass
class TrainConfig:
    max_duration: int = 30
    learning_rate: float = 1.0
    t_warmup: int = 5
    time_limit: Optional[float] = None
    early_stopping_factor: Optional[float] = 1.5
    extra_steps_after_cancel: int = 3
    canceled_check_interval: int = 1
    save_interval: int = 10
    device_batch_size: int = 8
    d_model: int = 4


def get_global_rank() -> int:
    return jax.process_index()


def synchronize_value(value, device=None):
    return multihost_utils.broadcast_one_to_all(np.asarray(value)).item()


def synchronize_flag(flag: bool, device=None) -> bool:
    return bool(synchronize_value(flag, device))


class Trainer:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.device = jax.devices()[0]
        self.mesh = Mesh(np.array(jax.devices()), ("dp",))
        self.params = jnp.zeros((cfg.d_model,))
        self.global_step = 0
        self.min_train_loss = float("inf")
        self.cur_train_loss = float("inf")
        self.checkpoints = []
        rng = np.random.default_rng(100 + get_global_rank())
        self.x = rng.normal(size=(cfg.max_duration, cfg.device_batch_size, cfg.d_model)).astype(np.float32)
        self.y = self.x @ np.arange(1, cfg.d_model + 1, dtype=np.float32)
        self._step = jax.jit(self._train_step, out_shardings=NamedSharding(self.mesh, P()))

    def _train_step(self, params, x, y, lr):
        def loss_fn(p):
            return jnp.mean((x @ p - y) ** 2)
        loss, grad = jax.value_and_grad(loss_fn)(params)
        return params - lr * grad, loss

    def scheduler(self, step):
        return self.cfg.learning_rate * min(1.0, (step + 1) / self.cfg.t_warmup)

    def train_step(self, step):
        sharding = NamedSharding(self.mesh, P("dp"))
        x = jax.make_array_from_process_local_data(sharding, self.x[step])
        y = jax.make_array_from_process_local_data(sharding, self.y[step])
        self.params, loss = self._step(self.params, x, y, self.scheduler(step))
        self.cur_train_loss = float(loss)
        self.min_train_loss = min(self.min_train_loss, self.cur_train_loss)
        return {"train/CrossEntropyLoss": self.cur_train_loss}

    def save_checkpoint(self):
        multihost_utils.sync_global_devices(f"save_step{self.global_step}")
        state = multihost_utils.process_allgather(np.asarray(self.params))
        self.checkpoints.append((self.global_step, np.asarray(state)[0]))
        multihost_utils.sync_global_devices(f"saved_step{self.global_step}")

    def check_if_cancelled(self) -> Tuple[bool, int]:
        should_cancel = False
        cancel_reason: Optional[str] = None
        extra_steps = 0
        if get_global_rank() == 0:
            if self.cfg.time_limit is not None and time.time() - self._start_time >= self.cfg.time_limit:
                should_cancel = True
                cancel_reason = "time limit reached"
                extra_steps = self.cfg.extra_steps_after_cancel
            elif (
                self.cfg.early_stopping_factor is not None
                and self.global_step > self.cfg.t_warmup
                and self.cur_train_loss > self.cfg.early_stopping_factor * self.min_train_loss
            ):
                should_cancel = True
                cancel_reason = "early stopping from loss increase"

        run_canceled = synchronize_flag(should_cancel, self.device)
        if run_canceled:
            extra_steps = synchronize_value(extra_steps, self.device)
            if cancel_reason is None:
                if extra_steps > 0:
                    log.warning(f"Run canceled, stopping in {extra_steps} more steps...")
                else:
                    log.warning("Run canceled")
            else:
                if extra_steps > 0:
                    log.warning(f"Run canceled due to {cancel_reason}, stopping in {extra_steps} more steps...")
                else:
                    log.warning(f"Run canceled due to {cancel_reason}")

        return run_canceled, extra_steps

    def fit(self):
        self._start_time = time.time()
        cancel_initiated = False
        stop_at: Optional[int] = self.cfg.max_duration
        save_checkpoints = True
        for step in range(self.cfg.max_duration):
            metrics = self.train_step(step)
            self.global_step += 1
            if not cancel_initiated and self.global_step % self.cfg.canceled_check_interval == 0:
                cancel_initiated, extra_steps = self.check_if_cancelled()
                if cancel_initiated:
                    stop_at = min(self.global_step + extra_steps, stop_at)
            if save_checkpoints and (cancel_initiated or self.global_step % self.cfg.save_interval == 0):
                self.save_checkpoint()
                if cancel_initiated:
                    save_checkpoints = False
            if stop_at is not None and self.global_step >= stop_at:
                break
        return metrics


def main():
    trainer = Trainer(TrainConfig())
    metrics = trainer.fit()
    print(f"rank {get_global_rank()}: last loss {metrics['train/CrossEntropyLoss']:.3f}")
    print("RESULT global_step", trainer.global_step)
    print("RESULT checkpoints", [s for s, _ in trainer.checkpoints])
    print("RESULT params", np.round(trainer.checkpoints[-1][1], 3).tolist())


if __name__ == "__main__":
    main()
