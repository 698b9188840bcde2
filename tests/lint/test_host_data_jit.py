"""A jitted call whose inputs are all host data runs on this process's default device only: not
cross-process work (docs/rules/MCJ101.md, "What is not cross-process work"). Each case is the same
program with one thing changed that may make the computation span every process's devices."""

from __future__ import annotations

import pytest

from mcjax_lint import engine

HEAD = (
    "import functools\n"
    "import jax\n"
    "import jax.numpy as jnp\n"
    "import numpy as np\n"
    "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
    "mesh = Mesh(np.array(jax.devices()), ('x',))\n"
    "W = np.ones((4, 4), np.float32)\n"
    "G = jax.device_put(W, NamedSharding(mesh, P('x')))\n"
    "def decode(x):\n"
    "    return jnp.tanh(x @ W)\n"
    "def decode_global(x):\n"
    "    return jnp.tanh(x @ G)\n"
)


def _codes(body: str) -> list[str]:
    findings, _ = engine.analyze_project({"t.py": HEAD + body})
    return [f.code for f in findings]


@pytest.mark.parametrize("body", [
    "step = jax.jit(decode)\nif jax.process_index() == 0:\n    step(np.zeros((2, 4)))\n",
    "step = jax.jit(decode)\nx = np.zeros((2, 4))\nif jax.process_index() == 0:\n    step(x[0])\n",
    "step = jax.jit(jnp.sum)\nif jax.process_index() == 0:\n    step(jax.device_get(G))\n",
    "step = jax.jit(decode)\nn = 1 + jax.process_index()\nstep(np.zeros((n, 4)))\n",
    "@jax.jit\ndef f(x):\n    return x * 2\nif jax.process_index() == 0:\n    f([1.0, 2.0])\n",
    "step = functools.partial(jax.jit(lambda a, b: a + b), np.ones(3))\n",
])
def test_local_jit_on_host_data_is_not_reported(body):
    assert _codes(body) == []


@pytest.mark.parametrize("body", [
    # the input is a global array
    "step = jax.jit(decode)\nif jax.process_index() == 0:\n    step(G)\n",
    # the function closes over a global array
    "step = jax.jit(decode_global)\nif jax.process_index() == 0:\n    step(np.zeros((2, 4)))\n",
    # placed by a sharding
    "step = jax.jit(decode, out_shardings=NamedSharding(mesh, P()))\nif jax.process_index() == 0:\n    step(W)\n",
    # a partial bound to a global array
    "step = functools.partial(jax.jit(jnp.dot), G)\nif jax.process_index() == 0:\n    step(W)\n",
    # pmap spans every process's devices
    "step = jax.pmap(decode)\nif jax.process_index() == 0:\n    step(np.zeros((1, 4)))\n",
    # a mesh context places the computation on the mesh
    "step = jax.jit(decode)\nwith mesh:\n    if jax.process_index() == 0:\n        step(W)\n",
    # a parameter of unknown origin
    "step = jax.jit(decode)\ndef run(x):\n    if jax.process_index() == 0:\n        step(x)\n",
])
def test_jit_that_may_touch_a_global_array_is_still_reported(body):
    assert "MCJ101" in _codes(body)


# Followed through calls: a helper is analysed in the context of each call (what its parameters
# hold there), a pmap's outputs are this process's own arrays.
SHOW = "def show(x, scale=2.0):\n    return step(x * scale)\nstep = jax.jit(decode)\n"


@pytest.mark.parametrize("body", [
    SHOW + "if jax.process_index() == 0:\n    show(np.zeros((2, 4)))\n",
    SHOW + "def twice(y):\n    return show(y) + show(y)\nif jax.process_index() == 0:\n    twice(W)\n",
    SHOW + "out = jax.pmap(lambda a: a * 2)(np.ones((1, 2, 4)))\nif jax.process_index() == 0:\n    show(out[0])\n",
    SHOW + "def rows():\n    return np.zeros((2, 4))\nif jax.process_index() == 0:\n    show(rows())\n",
])
def test_helper_running_a_local_jit_on_host_data_is_not_reported(body):
    assert _codes(body) == []


def _findings(body: str):
    findings, _ = engine.analyze_project({"t.py": HEAD + body})
    return [(f.code, f.severity.value if hasattr(f.severity, "value") else str(f.severity), f.message) for f in findings]


@pytest.mark.parametrize("body", [
    SHOW + "if jax.process_index() == 0:\n    show(G)\n",
    SHOW + "if jax.process_index() == 0:\n    show(W, scale=G)\n",
    SHOW + "def twice(y):\n    return show(y) + show(y)\nif jax.process_index() == 0:\n    twice(G)\n",
])
def test_helper_handed_a_global_array_is_a_certain_finding(body):
    found = _findings(body)
    assert [c for c, _, _ in found] == ["MCJ101"] and found[0][1] == "error", found


def test_jitted_closure_on_host_data_is_a_possible_finding():
    # What a lambda (or a bound method) captures is not followed: it may be a global array.
    found = _findings("step = jax.jit(lambda a: a @ G)\nif jax.process_index() == 0:\n    step(W)\n")
    assert [(c, s) for c, s, _ in found] == [("MCJ101", "warning")], found
    assert "possible" in found[0][2] and "capture" in found[0][2]
