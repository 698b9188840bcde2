# A coupled two-discipline model in the style of OpenMDAO: the disciplines sit in a ParallelGroup
# (one per process) and a block-Jacobi solver exchanges their outputs until the residual converges.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ExplicitComponent:
    def __init__(self, name, src, coef, offset):
        self.name, self.src, self.coef, self.offset = name, src, coef, offset

    def solve_nonlinear(self, inputs, outputs):
        outputs[self.name] = self.coef * inputs[self.src] + self.offset


class ImplicitComponent:
    def __init__(self, name, src, x):
        self.name, self.src, self.x = name, src, x

    def apply_nonlinear(self, inputs, outputs):
        return outputs[self.name] - 0.5 * np.cos(inputs[self.src]) - self.x

    def guess_nonlinear(self, inputs, outputs):
        if abs(self.apply_nonlinear(inputs, outputs)) > 1.0:
            outputs[self.name] = self.x

    def solve_nonlinear(self, inputs, outputs):
        for _ in range(20):
            r = self.apply_nonlinear(inputs, outputs)
            outputs[self.name] -= r
            if abs(r) < 1e-12:
                break


class ParallelGroup:
    def __init__(self, subsystems):
        self.subsystems = subsystems
        self.rank, self.size = jax.process_index(), jax.process_count()

    def _setup(self):
        self._local = [s for i, s in enumerate(self.subsystems) if i % self.size == self.rank]
        self._names = [s.name for s in self.subsystems]
        self._outputs = {n: 0.0 for n in self._names}
        self._inputs = dict(self._outputs)
        self._has_guess = any(hasattr(s, "guess_nonlinear") for s in self._local)

    def _transfer(self):
        local = np.array([self._outputs[n] if any(s.name == n for s in self._local) else 0.0
                          for n in self._names], dtype=np.float64)
        owned = np.array([any(s.name == n for s in self._local) for n in self._names], dtype=np.float64)
        vals = np.asarray(multihost_utils.process_allgather(np.stack([local, owned])))
        merged = (vals[:, 0] * vals[:, 1]).sum(axis=0)
        for n, v in zip(self._names, merged):
            self._inputs[n] = float(v)
            self._outputs[n] = float(v)

    def _guess_nonlinear(self):
        if self._has_guess:
            self._transfer()
            for s in self._local:
                if hasattr(s, "guess_nonlinear"):
                    s.guess_nonlinear(self._inputs, self._outputs)

    def _residual_norm(self, previous):
        local = sum((self._outputs[s.name] - previous[s.name]) ** 2 for s in self._local)
        return float(np.sqrt(np.asarray(multihost_utils.process_allgather(np.float64(local))).sum()))


class NonlinearBlockJacobi:
    def __init__(self, maxiter=50, atol=1e-6):
        self.maxiter, self.atol = maxiter, atol

    def solve(self, group):
        group._guess_nonlinear()
        for it in range(1, self.maxiter + 1):
            group._transfer()
            previous = dict(group._outputs)
            for s in group._local:
                s.solve_nonlinear(group._inputs, group._outputs)
            norm = group._residual_norm(previous)
            if norm < self.atol:
                return it, norm
        return self.maxiter, norm


def main():
    model = ParallelGroup([ImplicitComponent("y1", src="y2", x=3.0),
                           ExplicitComponent("y2", src="y1", coef=0.3, offset=1.0)])
    model._setup()
    iters, norm = NonlinearBlockJacobi().solve(model)
    model._transfer()
    print("RESULT converged", norm < 1e-6)
    print("RESULT iterations", iters)
    print("RESULT y1", round(model._outputs["y1"], 5))
    print("RESULT y2", round(model._outputs["y2"], 5))


if __name__ == "__main__":
    main()
