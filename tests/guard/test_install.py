"""An in-code `runtime_guard.install()` after the program's imports: the jit objects those
imports made are wrapped, so their cached cross-process calls keep JAX's C++ fast path (plain,
the guard would see them only on JAX's Python path, ~12x slower a call)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

LIB = textwrap.dedent('''
    import functools
    import jax
    from jax import jit

    @jax.jit
    def step(x):
        return x * 2

    @functools.partial(jax.jit, static_argnums=1)
    def scaled(x, k):
        return x * k

    jit_static = functools.partial(jax.jit, static_argnums=(1,))

    class Model:
        @functools.partial(jax.jit, static_argnums=0)
        def apply(self, x):
            return x + 1

    TABLE = {step: "step"}
''')

MAIN = textwrap.dedent('''
    import jax, jax.numpy as jnp
    import mylib
    from mylib import step as alias
    plain = jax.jit(lambda x: x - 1)
    import runtime_guard
    from runtime_guard.guard import GuardedJit
    from jax._src import api
    g = runtime_guard.install(quiet=True)
    x = jnp.arange(3.0)
    assert type(mylib.step) is GuardedJit and mylib.step is alias, (mylib.step, alias)
    assert type(plain) is GuardedJit and type(mylib.scaled) is GuardedJit
    assert type(mylib.Model.__dict__["apply"]) is GuardedJit
    assert mylib.jit is jax.jit and type(mylib.jit(lambda y: y)) is GuardedJit
    assert type(mylib.jit_static(lambda y, k: y * k)) is GuardedJit
    assert type(api.jit) is not GuardedJit  # JAX's own modules are left alone
    # The wrappers behave as the jit objects did.
    assert mylib.step(x).tolist() == [0.0, 2.0, 4.0] and plain(x).tolist() == [-1.0, 0.0, 1.0]
    assert mylib.scaled(x, 3).tolist() == [0.0, 3.0, 6.0]
    assert mylib.Model().apply(x).tolist() == [1.0, 2.0, 3.0]
    assert "mul" in mylib.step.lower(x).as_text()
    assert mylib.TABLE[mylib.step] == "step"  # a table keyed by the jit object still finds it
    print("adopted", g.adopted)
    runtime_guard.uninstall()  # puts the jit objects back
    assert type(mylib.step).__name__ == "PjitFunction" and type(mylib.Model.__dict__["apply"]) is not GuardedJit
''')


def test_jit_objects_made_before_an_in_code_install_are_wrapped(tmp_path):
    (tmp_path / "mylib.py").write_text(LIB)
    (tmp_path / "main.py").write_text(MAIN)
    r = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "JAX_PLATFORMS": "cpu"})
    assert r.returncode == 0, r.stderr[-3000:]
    # step (in mylib and as `alias` in __main__), scaled, Model.apply, plain, `jit`, `jit_static`
    assert r.stdout.split() == ["adopted", "7"], r.stdout + r.stderr[-2000:]
