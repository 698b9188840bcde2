"""[tool.mcjax] loading and validation: every problem is one clear line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcjax_lint.config import ConfigError, LintConfig, RuleFilter, is_enabled, load_config
from mcjax_lint.model import Severity


def _write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "pyproject.toml"
    p.write_text("[project]\nname = 'x'\n\n[tool.mcjax]\n" + body)
    return p


def test_full_example_maps_to_settings(tmp_path):
    _write(tmp_path, """
select = ["MCJ1", "MCJ2"]
extend-select = ["MCJ401"]
ignore = ["MCJ104"]
exclude = ["third_party"]
extend-exclude = ["generated/*.py"]
max-file-size = 200000
collective-functions = ["mypkg.dist.all_reduce_metrics", "mypkg.ckpt.Saver.*"]
benign-functions = ["mypkg.log.log_on_main"]
process-dependent-sources = ["mypkg.dist.is_main_process"]
sanitizers = ["mypkg.dist.broadcast_from_main"]
assume-unknown-calls-collective = true

[tool.mcjax.per-file-ignores]
"tests/*" = ["MCJ1"]
"__init__.py" = ["MCJ201"]

[tool.mcjax.severity]
MCJ201 = "warning"
""")
    sub = tmp_path / "pkg" / "deep"
    sub.mkdir(parents=True)
    cfg = load_config(None, sub)  # found by walking up
    assert cfg.project_root == tmp_path.resolve()
    assert cfg.select == ("MCJ1", "MCJ2") and cfg.extend_select == ("MCJ401",) and cfg.ignore == ("MCJ104",)
    assert cfg.exclude == ("third_party",) and cfg.extend_exclude == ("generated/*.py",)
    assert cfg.max_file_size == 200000
    assert cfg.severity == {"MCJ201": Severity.WARNING}
    a = cfg.analysis
    assert a.collective_functions == ("mypkg.dist.all_reduce_metrics", "mypkg.ckpt.Saver.*")
    assert a.benign_functions == ("mypkg.log.log_on_main",)
    assert a.process_dependent_sources == ("mypkg.dist.is_main_process",)
    assert a.sanitizers == ("mypkg.dist.broadcast_from_main",)
    assert a.assume_unknown_calls_collective is True

    rf = RuleFilter(cfg)
    assert rf.reported("MCJ101", "pkg/a.py")
    assert not rf.reported("MCJ104", "pkg/a.py")  # ignored
    assert not rf.reported("MCJ301", "pkg/a.py")  # not selected
    assert rf.reported("MCJ401", "pkg/a.py")  # extend-select
    assert not rf.reported("MCJ101", "tests/test_a.py")  # per-file-ignores by path glob
    assert rf.reported("MCJ201", "tests/test_a.py")
    assert not rf.reported("MCJ201", "pkg/__init__.py")  # per-file-ignores by file name
    assert rf.severity("MCJ201", Severity.ERROR) == Severity.WARNING


def test_most_specific_selector_wins():
    assert is_enabled("MCJ101", ["ALL"], [])
    assert not is_enabled("MCJ101", ["ALL"], ["MCJ1"])
    assert is_enabled("MCJ101", ["MCJ101"], ["MCJ1"])  # more specific select beats the prefix ignore
    assert not is_enabled("MCJ101", ["MCJ1"], ["MCJ1"])  # tie: ignore wins
    assert not is_enabled("MCJ201", ["MCJ1"], [])


def test_no_config_anywhere_uses_defaults(tmp_path):
    (tmp_path / ".git").mkdir()
    cfg = load_config(None, tmp_path)
    assert cfg.config_path is None and cfg.project_root == tmp_path.resolve()
    assert cfg.select == LintConfig().select


def test_pyproject_without_table_is_skipped_for_config_but_marks_the_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    cfg = load_config(None, tmp_path)
    assert cfg.config_path is None and cfg.project_root == tmp_path.resolve()


@pytest.mark.parametrize(
    "body, expected",
    [
        ("selct = ['MCJ1']\n", "unknown key 'selct' in [tool.mcjax] (did you mean 'select'?)"),
        ("select = 'MCJ101'\n", "'select' must be a list of strings, got a string"),
        ("ignore = ['MCJ999']\n", "'ignore': unknown rule code or prefix 'MCJ999'"),
        ("ignore = ['E501']\n", "'ignore': unknown rule code or prefix 'E501'"),
        ("collective-functions = ['not a name']\n", "'collective-functions': 'not a name' is not a dotted name"),
        ("assume-unknown-calls-collective = 'yes'\n", "'assume-unknown-calls-collective' must be true or false"),
        ("max-file-size = -1\n", "'max-file-size' must be a positive integer"),
        ("[tool.mcjax.severity]\nMCJ101 = 'fatal'\n", "'severity.MCJ101' must be \"error\", \"warning\" or \"info\""),
        ("[tool.mcjax.severity]\nMCJ777 = 'error'\n", "'severity': unknown rule code 'MCJ777'"),
        ("per-file-ignores = ['x']\n", "'per-file-ignores' must be a table"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path, body, expected):
    p = _write(tmp_path, body)
    with pytest.raises(ConfigError) as e:
        load_config(None, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(str(p)), msg
    assert expected in msg, msg


def test_explicit_config_file_with_top_level_keys(tmp_path):
    cfg_file = tmp_path / "mcjax.toml"
    cfg_file.write_text("ignore = ['MCJ2']\nsanitizers = ['a.b']\n")
    cfg = load_config(cfg_file, Path("/"))
    assert cfg.ignore == ("MCJ2",) and cfg.analysis.sanitizers == ("a.b",)
    assert cfg.project_root == tmp_path.resolve()


def test_missing_explicit_config_file(tmp_path):
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_config(tmp_path / "nope.toml", tmp_path)


def test_other_components_tables_are_left_alone(tmp_path):
    _write(tmp_path, "ignore = ['MCJ2']\n[tool.mcjax.guard]\nmode = 'strict'\n")
    assert load_config(None, tmp_path).ignore == ("MCJ2",)
