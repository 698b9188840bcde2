import pytest

# pytester drives the pytest plugin's own tests (tests/plugin/); it must be enabled at the top level.
pytest_plugins = ["pytester"]

# Modules whose tests start real JAX processes and check wall-clock windows: hang thresholds of a
# few seconds, a heartbeat limit crossed on purpose (SIGSTOP, a held GIL), `seconds < N` bounds.
# test_causes asserts on test_programs' runs (one run per scenario in a worker: the same worker).
TIMED = tuple(f"tests/{m}.py" for m in (
    "guard/test_programs", "guard/test_causes", "guard/test_workers", "guard/test_subsets",
    "guard/test_heartbeats", "postmortem/test_report_consistency", "postmortem/test_hang_reports",
    "postmortem/test_guard_e2e", "postmortem/test_cross_host", "plugin/test_plugin_failures",
    "plugin/test_plugin_options"))
# Run first, with every other worker idle: one supervisor per "host", each of which must say within
# the 4 s heartbeat limit that its process (holding the GIL) still runs. Beside a CPU-bound worker
# at load average 8 their two GIL tests failed in 2 of 3 runs, alone in none of 3.
ALONE = ("tests/guard/test_cross_host.py",)
# The other modules that start JAX processes: each module on one worker, so that the runs its
# tests share (module fixtures, guard_run's session cache) are made once.
PROCESS_DIRS = ("tests/guard/", "tests/postmortem/", "tests/plugin/")


@pytest.hookimpl(optionalhook=True)  # (no error where pytest-xdist is not installed)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under pytest-xdist (`-n 2`, the README's test command) the timed modules run one test at a
    time on one worker, in their usual order, beside one other worker (one CPU-bound lint test, or
    one module's multi-process job, at a time): two of their windows never overlap. The `ALONE`
    modules run first, on one worker while the others wait. Every other test is distributed as
    with `--dist load`. (xdist's `--dist loadgroup` cannot express this with pytest >= 9.2: it
    renames node ids through an attribute pytest no longer reads.) Other `--dist` modes are left
    as asked."""
    if config.getoption("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TimedTestsOnOneWorker(LoadScopeScheduling):
        """xdist's scope scheduling (a scope's tests go to one worker, the largest scope first)."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if module in TIMED:
                return "timed process tests"
            if module in ALONE:
                return "alone"
            return module if module.startswith(PROCESS_DIRS) else nodeid

        def _alone_running(self) -> bool:
            return any("alone" in work and not all(work["alone"].values()) for work in self.assigned_work.values())

        def _assign_work_unit(self, node) -> None:
            if "alone" in self.workqueue:
                self.workqueue.move_to_end("alone", last=False)  # first: to the first worker
            elif self._alone_running() and "alone" not in self.assigned_work[node]:
                return  # this worker waits, idle, until they are done (mark_test_complete)
            super()._assign_work_unit(node)

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            alone = self._alone_running()
            super().mark_test_complete(node, item_index, duration)
            if alone and not self._alone_running():
                for other in self.assigned_work:
                    if other is not node:
                        self._reschedule(other)

    return TimedTestsOnOneWorker(config, log)
