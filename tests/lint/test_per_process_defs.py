"""A function defined in an arm of an `if` whose test differs between processes exists only on
the processes that took that arm: a jit defined in a rank-0 block is traced by process 0 alone,
so the values it closes over are no program the processes compile differently (MCJ304). Applied
to global arrays there, the `if` is the finding (MCJ101). The hazard look-alike is
`fixtures/lint/hazards/jit_over_rank_value_outside_rank_block.py`."""

from __future__ import annotations

from mcjax_lint import engine

RANK0_PREVIEW = '''
import jax
import jax.numpy as jnp
import numpy as np


def preview(cfg):
    jax.distributed.initialize()
    if jax.process_index() == 0:
        frames = int(cfg["preview_frames"])
        gain = float(cfg["gain"])

        @jax.jit
        def render(clip):
            return jnp.tanh(clip[:, :frames] * gain)

        clip = np.random.default_rng(0).normal(size=(2, 16)).astype(np.float32)
        print("preview mean", float(np.asarray(render(clip)).mean()))
'''


def _codes(src: str) -> list[str]:
    findings, errors = engine.analyze_project({"t.py": src})
    assert errors == []
    return [f.code for f in findings]


def test_a_jit_defined_in_a_rank0_block_closes_over_no_trace_constant():
    assert "MCJ304" not in _codes(RANK0_PREVIEW)


def test_the_same_jit_defined_outside_the_block_does():
    # the def moved out of the rank-0 block, the settings set there over defaults: every
    # process traces it, process 0 with its own `frames` and `gain`
    src = RANK0_PREVIEW.replace('''        @jax.jit
        def render(clip):
            return jnp.tanh(clip[:, :frames] * gain)

''', "").replace('''    if jax.process_index() == 0:
''', '''    frames, gain = 8, 1.0
    if jax.process_index() == 0:
''').replace('''        clip = np.random''', '''    @jax.jit
    def render(clip):
        return jnp.tanh(clip[:, :frames] * gain)

    if jax.process_index() == 0:
        clip = np.random''')
    assert _codes(src).count("MCJ304") == 2
