"""The tooling shared by the sealed evaluation sets (benchmarks/sealed/, benchmarks/sealed2/).

One implementation of each tool, parameterized by the set's directory; each set keeps its own
thin entry points (benchmarks/<set>/run_pair.py, prepare_codebases.py, make_split.py, ...), whose
docstrings document the commands for that set.
"""
