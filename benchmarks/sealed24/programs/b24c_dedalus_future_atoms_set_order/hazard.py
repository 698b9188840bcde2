import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX, NZ = 16, 8
MESH = Mesh(np.array(jax.devices()), ("x",))
COEFF = NamedSharding(MESH, P("x", None))
REPLICATED = NamedSharding(MESH, P())

_backward = jax.jit(lambda c: jnp.real(jnp.fft.ifft2(c)) * NX * NZ, out_shardings=REPLICATED)
_decay = jax.jit(lambda c, k2, dt: c * jnp.exp(-k2 * dt), out_shardings=COEFF)


class Operand:
    def atoms(self):
        return set()


class Field(Operand):
    def __init__(self, name, seed, amplitude=1.0):
        self.name = name
        rng = np.random.default_rng(seed)
        spec = np.zeros((NX, NZ), np.complex64)
        spec[:4, :4] = amplitude * (rng.normal(size=(4, 4)) + 1j * rng.normal(size=(4, 4))) / (NX * NZ)
        self.coeff = jax.make_array_from_callback((NX, NZ), COEFF, lambda idx: spec[idx])
        self.grid = None

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Field) and other.name == self.name

    def atoms(self):
        return {self}

    def require_grid_space(self):
        if self.grid is None:
            self.grid = np.asarray(_backward(self.coeff))

    def evaluate(self):
        return self.grid

    def __mul__(self, other):
        return Future(np.multiply, self, other)

    def __add__(self, other):
        return Future(np.add, self, other)


class Future(Field):
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def atoms(self):
        atoms = set()
        for arg in self.args:
            atoms.update(arg.atoms())
        return atoms

    def evaluate(self):
        return self.func(*(a.evaluate() for a in self.args))

    __hash__ = object.__hash__
    __eq__ = object.__eq__


class DictionaryHandler:
    def __init__(self, iter):
        self.iter, self.tasks, self.series = iter, [], {}

    def add_task(self, expr, name):
        self.tasks.append((name, expr))
        self.series[name] = []


class Evaluator:
    def __init__(self):
        self.handlers = []

    def add_dictionary_handler(self, iter):
        self.handlers.append(DictionaryHandler(iter))
        return self.handlers[-1]

    def evaluate_scheduled(self, iteration):
        handlers = [h for h in self.handlers if iteration % h.iter == 0]
        if not handlers:
            return
        atoms = set()
        for h in handlers:
            for _, expr in h.tasks:
                atoms.update(expr.atoms())
        for field in atoms:
            field.require_grid_space()
        for h in handlers:
            for name, expr in h.tasks:
                h.series[name].append(float(np.mean(expr.evaluate())))


class Solver:
    def __init__(self, fields, kappa=0.01):
        self.fields = fields
        kx = np.fft.fftfreq(NX, 1.0 / NX)[:, None]
        kz = np.fft.fftfreq(NZ, 1.0 / NZ)[None, :]
        self.k2 = jax.device_put(kappa * (kx ** 2 + kz ** 2).astype(np.float32), COEFF)
        self.iteration = 0

    def step(self, dt):
        for f in self.fields:
            f.coeff = _decay(f.coeff, self.k2, dt)
            f.grid = None
        self.iteration += 1


def main():
    names = ["u", "w", "b", "p", "c", "ct"]
    u, w, b, p, c, ct = fields = [Field(n, seed=i, amplitude=1.0 + i) for i, n in enumerate(names)]
    evaluator = Evaluator()
    flow = evaluator.add_dictionary_handler(iter=5)
    flow.add_task(u * u + w * w, name="KE")
    flow.add_task(w * b, name="buoyancy_flux")
    flow.add_task(c * c + ct * ct, name="tracer_variance")
    flow.add_task(p * u, name="pressure_work")
    solver = Solver(fields)
    for _ in range(20):
        solver.step(0.05)
        evaluator.evaluate_scheduled(solver.iteration)
    for name, series in flow.series.items():
        print(f"RESULT {name}", [round(v, 5) for v in series])


if __name__ == "__main__":
    main()
