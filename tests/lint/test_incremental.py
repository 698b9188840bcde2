"""The cached path equals a rebuild: random edits of a multi-module project (the lint fixtures
as one project), each linted through the cache as pre-commit does and compared with findings and
index facts computed from scratch (benchmarks/lint_incremental_check.py does the same on the
real corpus)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import lint_incremental_check as chk  # noqa: E402


@pytest.fixture()
def project(tmp_path):
    return chk.fresh_copy([REPO / "fixtures" / "lint"], tmp_path / "proj")


def test_line_moves_are_served_by_moving_the_cached_index(project):
    out = chk.check(project, edits=12, seed=7, kinds=("insert_lines",), full_every=4, log=lambda s: None)
    assert out["edits"] == 12 and out["full_checks"] == 3
    assert out["mismatches"] == []
    # Moving lines does not rebuild the index (the position-free fingerprint is unchanged), except
    # where an origin cannot be told apart (two `train.py` with a source on the same line).
    assert out["how"].get("moved", 0) >= 9


def test_random_edits_of_every_kind_match_a_rebuild(project):
    out = chk.check(project, edits=24, seed=11, full_every=6, log=lambda s: None)
    assert out["edits"] == 24 and len(out["by_kind"]) >= 5
    assert out["mismatches"] == []
    # Some real changes were re-solved on the cached index rather than rebuilt.
    assert out["how"].get("re-solved", 0) >= 3


def test_the_check_sees_an_index_left_at_old_lines(project, monkeypatch):
    """The comparison can fail: with description anchors left at their old lines it must."""
    import re

    from mcjax_lint.analysis import relocate

    monkeypatch.setattr(relocate, "_ANCHOR", re.compile(r"(?!x)x"))
    out = chk.check(project, edits=10, seed=3, kinds=("insert_lines",), log=lambda s: None)
    assert out["mismatches"]


def test_the_check_sees_facts_missing_from_the_quoting_table(project, monkeypatch):
    """A cached index moves only the facts its quoting table lists: with an empty table the
    facts keep their old lines, and the comparison with a rebuild must say so."""
    from mcjax_lint.analysis import relocate

    monkeypatch.setattr(relocate, "quoting_table", lambda index: {})
    out = chk.check(project, edits=10, seed=3, kinds=("insert_lines",), log=lambda s: None)
    assert out["mismatches"]


_HELPER = "import jax\n\n\ndef helper():\n    return {body}\n"
_READERS = {
    # every way another file can name `pkg.utils.helper`: qualified import, module attribute,
    # a re-export from the package (alone, and read through it), and a relative import
    "pkg/__init__.py": "from .utils import helper\n",
    "pkg/a.py": "import jax\nfrom pkg.utils import helper\n\n\ndef f(x):\n    if helper():\n        jax.lax.psum(x, 'i')\n\n\ndef r():\n    return helper()\n",
    "pkg/b.py": "import jax\nfrom pkg import utils\n\n\ndef g(x):\n    if utils.helper():\n        jax.lax.psum(x, 'i')\n\n\ndef r():\n    return utils.helper()\n",
    "pkg/c.py": "import jax\nimport pkg\n\n\ndef h(x):\n    if pkg.helper():\n        jax.lax.psum(x, 'i')\n\n\ndef r():\n    return pkg.helper()\n",
    "pkg/sub/d.py": "import jax\nfrom ..utils import helper as hp\n\n\ndef k(x):\n    if hp():\n        jax.lax.psum(x, 'i')\n\n\ndef r():\n    return hp()\n",
}


@pytest.mark.parametrize("reader", sorted(_READERS))
def test_a_helper_another_file_reads_is_not_re_solved_in_place(tmp_path, reader):
    """Editing a helper that another file reads (here: becomes process-dependent, and so does
    the reader's `r()`, which returns it) must not be re-solved on the cached index alone,
    whatever form of import reaches it; the facts and the reader's findings equal a rebuild."""
    root = tmp_path / "proj"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.mcjax]\n")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "__init__.py").write_text(_READERS["pkg/__init__.py"] if reader == "pkg/c.py" else "")
    (root / reader).write_text(_READERS[reader])
    utils = root / "pkg" / "utils.py"
    utils.write_text(_HELPER.format(body="True"))
    chk.lint(root, None)
    utils.write_text(_HELPER.format(body="jax.process_index() == 0"))
    chk.lint(root, [utils])
    inc = chk.lint(root, [root / reader], need_index=True)
    ref = chk.lint(root, [root / reader], need_index=True, reference=True)
    assert not inc[2].stats.resolved, "a helper read by another file was re-solved in place"
    assert inc[0] == ref[0]
    assert chk.diff_facts(chk.facts(chk.shipped(inc[2].index) if inc[2].stats.index_built else inc[2].index),
                          chk.facts(chk.shipped(ref[2].index))) == []
    if reader != "pkg/__init__.py":
        assert inc[0], "the reader's divergent collective is found once the helper is process-dependent"
