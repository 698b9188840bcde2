"""The compatibility module against the installed JAX: every hook point exists, installs and
comes off cleanly, and program identities are stable across processes, paths and line numbers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

from runtime_guard import compat


def test_installed_jax_is_supported():
    assert compat.check() is None, compat.check()
    assert compat.jax_version()[:2] in compat.SUPPORTED


def test_hooks_install_and_uninstall_restore_jax():
    from jax._src import pjit, stages
    from jax._src.interpreters import pxla

    before = (jax.jit, pjit._get_fastpath_data, pxla.ExecuteReplicated.__call__, stages.Compiled.__call__,
              pxla.MeshExecutable.create_cpp_call)
    seen = []
    hooks = compat.DispatchHooks()
    hooks.install(on_execute=lambda er, args: seen.append(er.name), allow_fastpath=lambda ex: False,
                  on_compiled_call=None, wrap_jit=None)
    try:
        f = jax.jit(lambda x: x * 3 + 1)
        for _ in range(3):
            f(jnp.ones(4))
        # Fast path refused: every call ran through the Python path, where the hook sees it.
        assert seen.count("jit(<lambda>)") == 3, seen
    finally:
        hooks.uninstall()
    after = (jax.jit, pjit._get_fastpath_data, pxla.ExecuteReplicated.__call__, stages.Compiled.__call__,
             pxla.MeshExecutable.create_cpp_call)
    assert before == after


def test_exec_info_reads_an_executable():
    compiled = jax.jit(lambda x, y: (x @ y).sum()).lower(jnp.ones((2, 3)), jnp.ones((3, 4))).compile()
    info = compat.exec_info_from_mesh_executable(compat.compiled_mesh_executable(compiled), "jit(f)")
    assert info.in_avals == ("float32[2,3]", "float32[3,4]")
    assert info.out_avals == ("float32[]",)
    assert info.processes == (0,) and not info.multiprocess
    assert len(info.program) == 16 and info.program != "unknown"


PROGRAM = '''
import sys
import jax, jax.numpy as jnp
from runtime_guard import compat
{pad}
def step(w, x):
    return jnp.tanh(x @ w).sum()
c = jax.jit(step).lower(jnp.ones((3, 2)), jnp.ones((4, 3))).compile()
print(compat.program_fingerprint(compat.compiled_mesh_executable(c).xla_executable))
'''


def _fingerprint(tmp_path, name, pad="", body=None):
    d = tmp_path / name
    d.mkdir()
    src = (body or PROGRAM).format(pad=pad)
    (d / "prog.py").write_text(textwrap.dedent(src))
    out = subprocess.run([sys.executable, str(d / "prog.py")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_program_fingerprint_ignores_paths_and_lines(tmp_path):
    a = _fingerprint(tmp_path, "a")
    b = _fingerprint(tmp_path, "somewhere_else", pad="\n" * 17 + "# moved down\n")
    c = _fingerprint(tmp_path, "c", body=PROGRAM.replace("jnp.tanh", "jnp.sin"))
    assert a == b
    assert a != c


@pytest.mark.parametrize("version,ok", [("0.10.2", True), ("0.11.2", True), ("0.9.2", False), ("1.0.0", False)])
def test_version_gate(monkeypatch, version, ok):
    monkeypatch.setattr(jax, "__version__", version)
    monkeypatch.delenv("MCJAX_ALLOW_UNTESTED_JAX", raising=False)
    reason = compat.check()
    assert (reason is None) == ok, reason
    if not ok:
        assert version in reason and "MCJAX_ALLOW_UNTESTED_JAX" in reason
        monkeypatch.setenv("MCJAX_ALLOW_UNTESTED_JAX", "1")
        assert compat.check() is None


def test_arg_shapes_agree_across_processes_and_tell_shapes_apart():
    """The shape hash is compared between processes: it must not depend on PYTHONHASHSEED (a hash of
    a dtype's kind string would), and must tell shapes apart, one level into a batch dict."""
    from tests.guard.conftest import outputs_under_hash_seeds

    code = (
        "import jax.numpy as jnp, numpy as np\n"
        "from runtime_guard import compat\n"
        "f = compat.make_arg_shapes()\n"
        "print(f(({'w': jnp.ones((3, 2))}, jnp.ones((4, 2), jnp.bfloat16), {'x': np.ones((4, 8)), 'n': 3})))\n"
    )
    outs = outputs_under_hash_seeds(code)
    assert len(outs) == 1 and outs != {"0"}

    import jax.numpy as jnp
    import numpy as np

    from runtime_guard import compat

    f = compat.make_arg_shapes()
    assert f((jnp.ones((2, 3)),)) == f((np.ones((2, 3), np.float32),))  # a numpy batch and a jax one agree
    assert f((jnp.ones((2, 3)),)) != f((np.ones((2, 3)),))  # float64: another dtype
    assert f((jnp.ones((2, 3)),)) != f((jnp.ones((4, 3)),))
    assert f(({"x": jnp.ones((2, 3))},)) != f(({"x": jnp.ones((4, 3))},))
    assert f((1, "a", None)) == 0


TRACED = '''
import jax, jax.numpy as jnp, numpy as np
from runtime_guard import compat
hooks = compat.DispatchHooks()
hooks.install(on_execute=lambda er, args: None, allow_fastpath=lambda ex: True, on_compiled_call=None,
              wrap_jit=None)
{pad}
def step(w, x):
    # a Python callback and a debug print: their IR carries per-executable callback indices
    y = jax.pure_callback(lambda a: np.asarray(a) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    jax.debug.print("loss {{}}", y.sum())
    return jnp.tanh(y @ w).sum() * {scale}
c = jax.jit(step).lower(jnp.ones((3, 2)), jnp.ones((4, 3))).compile()
ex = compat.compiled_mesh_executable(c)
info = compat.exec_info_from_mesh_executable(ex, "jit(step)")
print(info.traced, info.program)
'''


def test_traced_program_hash_is_the_same_in_every_process_and_tells_constants_apart(tmp_path):
    """The program as traced identifies executables on accelerators (where autotuning changes the
    optimized HLO per process): it must not depend on the process (paths, lines, hash seed, the
    addresses of Python callbacks) and must tell a different constant apart."""
    import os

    def run(name, pad="", scale="1.0", seed="1"):
        d = tmp_path / name
        d.mkdir()
        (d / "prog.py").write_text(textwrap.dedent(TRACED.format(pad=pad, scale=scale)))
        env = dict(os.environ, PYTHONHASHSEED=seed, JAX_PLATFORMS="cpu")
        out = subprocess.run([sys.executable, str(d / "prog.py")], capture_output=True, text=True, timeout=120,
                             env=env)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    a = run("a")
    b = run("elsewhere", pad="\n" * 9 + "x = [object() for _ in range(1000)]  # other addresses\n", seed="7")
    c = run("c", scale="2.0")
    assert a[0] == "True" and a == b
    assert c[0] == "True" and c[1] != a[1]


def test_traced_program_is_only_used_for_the_executable_it_was_taken_from():
    """Entries are keyed by id(): an executable that did not go through the hook (or reuses a freed
    one's address) must not inherit another program's hash."""
    compiled = jax.jit(lambda x: x + 1).lower(jnp.ones(3)).compile()  # no hook installed here
    ex = compat.compiled_mesh_executable(compiled).xla_executable
    assert compat.traced_program(ex) is None
    compat._TRACED[id(ex)] = (b"another executable's fingerprint", "0123456789abcdef")
    try:
        assert compat.traced_program(ex) is None
    finally:
        del compat._TRACED[id(ex)]


def test_traced_program_hash_ignores_kernel_payloads_but_not_other_custom_calls():
    """Kernels (Mosaic, Pallas Triton) carry their serialized module, with source paths, in the
    custom call's configuration: another checkout path must not make another program."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    def hashed(target: str, config: str, n: int = 4) -> str:
        src = f"""
        func.func public @main(%arg0: tensor<{n}xf32>) -> tensor<{n}xf32> {{
          %0 = stablehlo.custom_call @{target}(%arg0) {{backend_config = "{config}"}} : (tensor<{n}xf32>) -> tensor<{n}xf32>
          return %0 : tensor<{n}xf32>
        }}"""
        with mlir.make_ir_context():
            return compat.traced_program_hash(ir.Module.parse(src))

    assert hashed("tpu_custom_call", "kernel at /home/a/model.py:3") == hashed("tpu_custom_call", "kernel at /srv/b/model.py:3")
    assert hashed("tpu_custom_call", "k") != hashed("tpu_custom_call", "k", n=8)
    assert hashed("my_op", "mode=1") != hashed("my_op", "mode=2")  # a plain custom call's config counts


def test_jit_options_text_tells_output_shardings_apart_alike_on_every_process():
    """Two jit objects of one function that differ only in their shardings run different programs
    from the same arguments: their identities differ, and read the same in every process."""
    from tests.guard.conftest import outputs_under_hash_seeds

    code = (
        "import jax, numpy as np\n"
        "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
        "from runtime_guard import compat\n"
        "m = Mesh(np.array(jax.devices()), ('data',))\n"
        "f = lambda w: w\n"
        "texts = [compat.jit_options_text(jax.jit(f, out_shardings=NamedSharding(m, s))) for s in (P(), P('data'))]\n"
        "texts.append(compat.jit_options_text(jax.jit(f)))\n"
        "assert len(set(texts)) == 3, texts\n"
        "print(texts)\n"
    )
    outs = outputs_under_hash_seeds(code)
    assert len(outs) == 1, outs
