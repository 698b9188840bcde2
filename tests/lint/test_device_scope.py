"""Which devices a module names (`summary._device_scope`), and the single-process programs built on
it (`ProjectIndex.single_process_script`): a script whose every device set is its own process's
runs no cross-process work, unless it reaches `initialize()`, a project module it imports names a
global device set, or a project module imports it."""

from __future__ import annotations

import textwrap

import pytest

from mcjax_lint.analysis.summary import summarize_source
from mcjax_lint.engine import analyze_project


def scope(src: str) -> str:
    return summarize_source(textwrap.dedent(src), "m.py", "m").device_scope


@pytest.mark.parametrize("src", [
    "import jax\nfrom jax.sharding import Mesh\nimport numpy as np\nm = Mesh(np.array(jax.local_devices()), ('d',))\n",
    "import jax\nfrom jax.experimental import mesh_utils\nm = mesh_utils.create_device_mesh((jax.local_device_count(),))\n",
    "import jax\nfrom jax.experimental import mesh_utils\nn = jax.local_device_count()\nm = mesh_utils.create_device_mesh((1, n))\n",
    "from jax.experimental import mesh_utils\nm = mesh_utils.create_device_mesh((1, 1))\n",
    "import jax\nfrom functools import partial\n@partial(jax.pmap, devices=jax.local_devices())\ndef f(x):\n    return x\n",
    "import jax\nf = jax.pmap(lambda x: x, devices=jax.local_devices()[:2])\n",
    # the `lax` axis collectives run over the local mesh they are mapped on
    "import jax\nfrom functools import partial\n@partial(jax.pmap, axis_name='i', devices=jax.local_devices())\n"
    "def f(x):\n    return jax.lax.psum(x, 'i')\n",
])
def test_local_device_sets(src):
    assert scope(src) == "local"


@pytest.mark.parametrize("src", [
    # any device set spanning every process, or the multi-process API
    "import jax\nfrom jax.sharding import Mesh\nimport numpy as np\nn = jax.local_device_count()\nm = Mesh(np.array(jax.devices()), ('d',))\n",
    "import jax\nn = jax.local_device_count()\nm = jax.make_mesh((n,), ('d',))\n",
    "import jax\nfrom jax.experimental import multihost_utils\nn = jax.local_device_count()\nmultihost_utils.sync_global_devices(\"x\")\n",
    # a mesh builder with no devices takes `jax.devices()`: only a shape of the local count is local
    "import jax\nfrom jax.experimental import mesh_utils\nn = jax.local_device_count()\nm = mesh_utils.create_device_mesh((8,))\n",
    "import jax\nfrom jax.experimental import mesh_utils\nm = mesh_utils.create_device_mesh((2 * jax.local_device_count(),))\n",
    "import jax\nfrom jax.experimental import mesh_utils\nn = jax.local_device_count()\nm = mesh_utils.create_device_mesh((n, n))\n",
    # a mesh of devices not known to be local
    "import jax\nfrom jax.sharding import Mesh\ndef mk(devs):\n    return Mesh(devs, ('d',))\nn = jax.local_device_count()\n",
    # a pmap given no devices spans every process
    "import jax\nn = jax.local_device_count()\n@jax.pmap\ndef f(x):\n    return x\n",
    "import jax\nfrom functools import partial\nn = jax.local_device_count()\n@partial(jax.pmap, axis_name='i')\ndef f(x):\n    return x\n",
    # another process's devices, whoever asks (review 7)
    "import jax\nimport numpy as np\nfrom jax.sharding import Mesh\n"
    "m = Mesh(np.array(jax.local_devices(process_index=0) + jax.local_devices(process_index=1)), ('d',))\n",
    "import jax\nfrom jax.sharding import Mesh\nm = Mesh(jax.local_devices(), ('d',))\nother = jax.local_devices(1)\n",
    # a cross-process collective the analysis knows, other than the `lax` axis ones (review 7)
    "import jax\nfrom flax.training import checkpoints\nfrom jax.sharding import Mesh\n"
    "m = Mesh(jax.local_devices(), ('d',))\ncheckpoints.save_checkpoint_multiprocess('/c', {}, 0)\n",
    "import jax\nfrom jax.sharding import Mesh\nm = Mesh(jax.local_devices(), ('d',))\n"
    "def wait(client):\n    client.wait_at_barrier('b', 1000)\n",
    # orbax synchronizes every process on its own
    "import jax\nimport orbax.checkpoint as ocp\nn = jax.local_device_count()\n",
])
def test_global_device_sets(src):
    assert scope(src) == "global"


@pytest.mark.parametrize("src", [
    "import jax.numpy as jnp\nx = jnp.ones(3)\n",
    # the local count as a batch size is no device set
    "import jax\nbatch = 8 * jax.local_device_count()\n",
    # a program naming the multi-process API is not local-only, whatever devices it builds
    "import jax\nimport numpy as np\nfrom jax.sharding import Mesh\nm = Mesh(np.array(jax.local_devices()), ('d',))\n"
    "print(jax.process_index())\n",
])
def test_no_device_set_of_its_own(src):
    assert scope(src) == ""


SCRIPT = '''
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
{extra}

mesh = Mesh(np.array(jax.local_devices()), ("d",))
step = jax.jit(jnp.tanh, out_shardings=NamedSharding(mesh, PartitionSpec("d")))
for name in os.listdir(sys.argv[1]):
    np.save(name, np.asarray(step(np.load(name))))
'''


def codes(files: dict[str, str], path: str) -> list[str]:
    findings, errors = analyze_project({k: textwrap.dedent(v) for k, v in files.items()})
    assert errors == []
    return [f.code for f in findings if f.path == path]


def test_local_script_alone_is_single_process():
    assert codes({"proj/run.py": SCRIPT.format(extra="")}, "proj/run.py") == []


def test_local_script_that_initializes_is_checked():
    src = SCRIPT.format(extra="jax.distributed.initialize()")
    assert "MCJ202" in codes({"proj/run.py": src}, "proj/run.py")


def test_local_script_importing_a_global_mesh_module_is_checked():
    files = {"proj/run.py": SCRIPT.format(extra="import meshes"),
             "proj/meshes.py": "import jax\nALL = jax.devices()\n"}
    assert "MCJ202" in codes(files, "proj/run.py")


def test_local_module_imported_by_the_project_is_checked():
    files = {"proj/run.py": SCRIPT.format(extra=""), "proj/main.py": "import run\n"}
    assert "MCJ202" in codes(files, "proj/run.py")


def test_local_script_naming_processes_is_checked():
    src = SCRIPT.format(extra="RANK = jax.process_index()")
    assert "MCJ202" in codes({"proj/run.py": src}, "proj/run.py")
