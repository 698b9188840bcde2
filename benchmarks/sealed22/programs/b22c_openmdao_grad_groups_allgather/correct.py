# Setup of the pre/opt/post iteration lists for a model whose aero and structures disciplines run
# in a ParallelGroup (one discipline per process).  Groups with a gradient-based nonlinear solver
# are treated as atomic, so every process needs the full set of such groups before it splits the
# systems into pre-optimization, iterated and post-optimization sets.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ALL_SYSTEMS = ["geom", "par.aero", "par.aero.vlm", "par.struct", "par.struct.fem", "perf", "report"]
MAX_NAMES = len(ALL_SYSTEMS)


class NewtonSolver:
    supports_gradients = True


class NonlinearBlockGS:
    supports_gradients = False


class Model:
    def __init__(self):
        self.rank, self.size = jax.process_index(), jax.process_count()
        solvers = {"par.aero": NewtonSolver(), "par.struct": NonlinearBlockGS()}
        owners = {"par.aero": 0, "par.struct": 1 % self.size}
        # groups of the ParallelGroup exist only on their owning process
        self._local_groups = {g: s for g, s in solvers.items() if owners[g] == self.rank}
        self.dvs, self.responses = {"geom"}, {"perf"}
        self.edges = [("geom", "par.aero.vlm"), ("geom", "par.struct.fem"), ("par.aero.vlm", "perf"),
                      ("par.struct.fem", "perf"), ("perf", "report")]

    def _allgather_names(self, names):
        codes = np.full(MAX_NAMES, -1, np.int32)
        codes[: len(names)] = [ALL_SYSTEMS.index(n) for n in sorted(names)]
        rows = np.asarray(multihost_utils.process_allgather(codes))
        return {ALL_SYSTEMS[c] for row in rows for c in row if c >= 0}

    def _setup_iteration_lists(self):
        grad_groups = {g for g, s in self._local_groups.items() if s.supports_gradients}
        if self.size > 1:
            grad_groups = self._allgather_names(grad_groups)
        # systems downstream of a design variable and upstream of a response are iterated
        downstream, frontier = set(self.dvs), list(self.dvs)
        while frontier:
            n = frontier.pop()
            for a, b in self.edges:
                if a == n and b not in downstream:
                    downstream.add(b)
                    frontier.append(b)
        upstream, frontier = set(self.responses), list(self.responses)
        while frontier:
            n = frontier.pop()
            for a, b in self.edges:
                if b == n and a not in upstream:
                    upstream.add(a)
                    frontier.append(a)
        opt = downstream & upstream
        for grp in grad_groups:  # atomic: the whole group iterates
            opt |= {s for s in ALL_SYSTEMS if s == grp or s.startswith(grp + ".")}
        local_opt = {s for s in opt if not s.startswith("par.") or any(
            s == g or s.startswith(g + ".") for g in self._local_groups)}
        opt = self._allgather_names(local_opt)
        post = {s for s in ALL_SYSTEMS if s not in opt and s in downstream}
        pre = set(ALL_SYSTEMS) - opt - post
        return sorted(pre), sorted(opt), sorted(post)


@jax.jit
def opt_iteration(x):
    return jnp.sum((x - 1.5) ** 2)


def main():
    model = Model()
    pre, opt, post = model._setup_iteration_lists()
    x = jnp.linspace(0.0, 3.0, len(opt))
    obj = float(np.asarray(multihost_utils.process_allgather(np.float32(opt_iteration(x)))).mean())
    print("RESULT pre", pre)
    print("RESULT opt", opt)
    print("RESULT post", post)
    print("RESULT obj", round(obj, 5))


if __name__ == "__main__":
    main()
