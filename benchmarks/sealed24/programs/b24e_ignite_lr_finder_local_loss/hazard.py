import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class State:
    def __init__(self):
        self.iteration = 0
        self.output = None


class Engine:
    def __init__(self, process_function):
        self._process_function = process_function
        self._iteration_completed = []
        self.state = State()
        self.should_terminate = False

    def add_iteration_completed_handler(self, handler, *args):
        self._iteration_completed.append((handler, args))

    def terminate(self):
        self.should_terminate = True

    def run(self, data, max_epochs=1):
        self.should_terminate = False
        for _ in range(max_epochs):
            for batch in data:
                self.state.iteration += 1
                self.state.output = self._process_function(self, batch)
                for handler, args in self._iteration_completed:
                    handler(self, *args)
                if self.should_terminate:
                    return self.state
        return self.state


class Optimizer:
    def __init__(self, params, lr):
        self.params = params
        self.lr = lr

    def step(self, grads):
        self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)


class FastaiLRFinder:
    def __init__(self):
        self._history = {"lr": [], "loss": []}
        self._best_loss = None
        self._stopped_early = False

    def attach(self, trainer, optimizer, start_lr, end_lr, num_iter, smooth_f=0.05, stop_th=5.0):
        self._optimizer = optimizer
        self._gamma = (end_lr / start_lr) ** (1.0 / num_iter)
        optimizer.lr = start_lr
        trainer.add_iteration_completed_handler(self._log_lr_and_loss, smooth_f, stop_th)
        trainer.add_iteration_completed_handler(self._step_lr)
        trainer.add_iteration_completed_handler(self._reached_num_iterations, num_iter)

    def _step_lr(self, trainer):
        self._optimizer.lr *= self._gamma

    def _log_lr_and_loss(self, trainer, smooth_f, stop_th):
        loss = trainer.state.output
        lr = self._optimizer.lr
        self._history["lr"].append(lr)
        if trainer.state.iteration == 1:
            self._best_loss = loss
        else:
            if smooth_f > 0:
                loss = smooth_f * loss + (1 - smooth_f) * self._history["loss"][-1]
            if loss < self._best_loss:
                self._best_loss = loss
        self._history["loss"].append(loss)
        if self._history["loss"][-1] > stop_th * self._best_loss:
            self._stopped_early = True
            print("Stopping early, the loss is too high")
            trainer.terminate()

    def _reached_num_iterations(self, trainer, num_iter):
        if trainer.state.iteration > num_iter:
            trainer.terminate()

    def get_results(self):
        return self._history


def make_update(optimizer):
    value_and_grad = jax.jit(jax.value_and_grad(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)))

    def update(engine, batch):
        x, y = batch
        loss, grads = value_and_grad(optimizer.params, x, y)
        grads = jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)
        optimizer.step(grads)
        return float(loss)

    return update


def get_dataloader(rank, features=4, n_batches=60, batch_size=8):
    rng = np.random.default_rng(11 + rank)
    scale = np.ones(features, np.float32)
    scale[0] = 5.0 if rank == 0 else 0.0
    data = []
    for _ in range(n_batches):
        x = (rng.normal(size=(batch_size, features)) * scale).astype(np.float32)
        data.append((x, (x @ np.arange(1, features + 1)).astype(np.float32)))
    return data


def main():
    rank = jax.process_index()
    optimizer = Optimizer({"w": jnp.zeros(4), "b": jnp.zeros(())}, lr=1e-4)
    trainer = Engine(make_update(optimizer))
    lr_finder = FastaiLRFinder()
    lr_finder.attach(trainer, optimizer, start_lr=1e-5, end_lr=1.0, num_iter=50)
    trainer.run(get_dataloader(rank), max_epochs=1)
    history = lr_finder.get_results()
    print(f"rank {rank}: lr finder stopped after {len(history['lr'])} iterations")
    w = np.asarray(multihost_utils.process_allgather(np.asarray(optimizer.params["w"])))
    print("RESULT lr_finder_iterations", len(history["lr"]))
    print("RESULT stopped_early", lr_finder._stopped_early)
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
