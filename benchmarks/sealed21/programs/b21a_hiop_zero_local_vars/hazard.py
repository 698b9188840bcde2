import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.config.update("jax_enable_x64", True)
jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EPS = np.finfo(np.float64).eps


class DistVector:
    """A vector distributed by contiguous blocks over the processes (hiopVectorPar-like)."""

    def __init__(self, local):
        self.data = np.asarray(local, dtype=np.float64)

    def get_local_size(self):
        return self.data.size

    def _reduce(self, value, op):
        gathered = np.asarray(multihost_utils.process_allgather(np.asarray(value, np.float64)))
        return float(op(gathered))

    def min(self):
        local = self.data.min() if self.data.size else np.inf
        return self._reduce(local, np.min)

    def infnorm(self):
        local = np.abs(self.data).max() if self.data.size else 0.0
        return self._reduce(local, np.max)

    def dot(self, other):
        return self._reduce(self.data @ other.data, np.sum)


class ExampleProblem:
    """min sum (x_i - t_i)^2  s.t.  lb <= x <= ub, with some variables fixed (lb == ub)."""

    def __init__(self, n=6):
        self.t = np.linspace(-1.0, 1.5, n)
        self.lb = np.zeros(n)
        self.ub = np.full(n, 2.0)
        self.lb[n // 2:] = self.ub[n // 2:] = 0.5  # the second half is fixed

    def local_range(self):
        n = self.t.size
        per = -(-n // jax.process_count())
        lo = min(jax.process_index() * per, n)
        return lo, min(lo + per, n)


def remove_fixed_variables(prob):
    lo, hi = prob.local_range()
    free = prob.lb[lo:hi] < prob.ub[lo:hi]
    idx = np.arange(lo, hi)[free]
    return idx


def adjust_small_slacks(slack, mu):
    num_adjusted_slack = 0
    if slack.get_local_size() > 0:
        small_val = EPS * min(1.0, mu)
        scale_fact = EPS ** 0.75
        slack_min = slack.min()
        if slack_min < small_val:
            bump = scale_fact * max(1.0, mu)
            mask = slack.data < small_val
            slack.data[mask] += bump
            num_adjusted_slack = int(mask.sum())
    return num_adjusted_slack


_grad = jax.jit(lambda x, t: 2.0 * (x - t))


def solve(prob, iters=12, mu=0.1):
    idx = remove_fixed_variables(prob)
    t, lb, ub = prob.t[idx], prob.lb[idx], prob.ub[idx]
    x = DistVector(np.clip(t, lb + 0.1, ub - 0.1))
    for it in range(iters):
        g = np.asarray(_grad(x.data, t))
        sl, su = DistVector(x.data - lb), DistVector(ub - x.data)
        adjust_small_slacks(sl, mu)
        adjust_small_slacks(su, mu)
        barrier_grad = DistVector(g - mu / sl.data + mu / su.data)
        nrm = barrier_grad.infnorm()
        step = DistVector(-barrier_grad.data / (2.0 + mu / sl.data ** 2 + mu / su.data ** 2))
        alpha = 1.0
        ratio_l = np.where(step.data < 0, -0.99 * sl.data / np.where(step.data < 0, step.data, -1), np.inf)
        ratio_u = np.where(step.data > 0, 0.99 * su.data / np.where(step.data > 0, step.data, 1), np.inf)
        alpha = min(alpha, DistVector(np.concatenate([ratio_l, ratio_u])).min())
        x = DistVector(x.data + alpha * step.data)
        mu = max(mu * 0.2, 1e-9)
        print(f"[{jax.process_index()}] iter {it} |grad_B|inf={nrm:.3e} alpha={alpha:.3f} mu={mu:.1e}")
    return x, nrm


def main():
    prob = ExampleProblem()
    x, nrm = solve(prob)
    obj = DistVector((x.data - prob.t[remove_fixed_variables(prob)]) ** 2).dot(DistVector(np.ones(x.get_local_size())))
    print("RESULT objective", round(obj, 6))
    print("RESULT final_grad_norm_below_1e-3", bool(nrm < 1e-3))


if __name__ == "__main__":
    main()
