"""CPU seconds per phase of one uncached lint run (the real pipeline, in this process).

    cd <a project, e.g. benchmarks/.work/tree> && python <checkout>/benchmarks/lint_phase_cpu.py .
    ... lint_phase_cpu.py --jobs 2 .     # with workers: the parent's CPU + its workers' per phase

Runs `mcjax-lint --no-cache --jobs 1` in-process and prints, per runner phase (summaries,
libraries, index, prefilter, analysis), the CPU time it took: on a shared machine CPU time varies
much less than wall time, and serially every phase's cost is its own. With `--jobs N` each phase
is printed as parent+workers (the workers' CPU is counted when the pool is joined, at the end of
the phase), then the critical path on N cores: per phase max(parent, (parent + workers) / N),
summed. Which checkout is measured is the one on PYTHONPATH (or the installed package).

Where the precise pass's workers are forked before the index's fixpoint and parse ahead
(`runner._Ahead`), their CPU is still counted in the analysis phase (when they are joined);
the CPU of their parsing ahead (`_parse_ahead`, done beside the index) is printed apart, and
the critical path counts it on the cores the index leaves free: index + max(parent,
(parent + workers - ahead + what of ahead the index did not cover) / N) for what follows.
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import sys
import tempfile
import time

from mcjax_lint import cli, runner


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def main(argv: list[str]) -> int:
    jobs = 1
    if argv[:1] == ["--jobs"]:
        jobs, argv = int(argv[1]), argv[2:]
    cpu: dict[str, list[float]] = {}
    last = [_cpu()]
    phase = runner.RunStats.phase

    def timed_phase(self, name: str, since: float) -> float:
        now = _cpu()
        acc = cpu.setdefault(name, [0.0, 0.0])
        acc[0] += now[0] - last[0][0]
        acc[1] += now[1] - last[0][1]
        last[0] = now
        return phase(self, name, since)

    runner.RunStats.phase = timed_phase
    ahead_log = tempfile.mkdtemp(prefix="lint_phase_cpu_")
    real_ahead = getattr(runner, "_parse_ahead", None)
    if real_ahead is not None:
        def parse_ahead(task):  # (in the workers: each appends its CPU seconds to its own file)
            c = time.process_time()
            try:
                return real_ahead(task)
            finally:
                with open(os.path.join(ahead_log, str(os.getpid())), "a") as f:
                    f.write(f"{time.process_time() - c}\n")

        runner._parse_ahead = parse_ahead
    t0 = _cpu()
    with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
        cli.main(["--format", "json", "--exit-zero", "--no-cache", "--jobs", str(jobs), *argv])
    t1 = _cpu()
    total = t1[0] - t0[0] + t1[1] - t0[1]
    load = f"(load average {os.getloadavg()[0]:.1f})"
    if jobs == 1:
        print("CPU s per phase: " + " ".join(f"{k}={v[0] + v[1]:.2f}" for k, v in cpu.items())
              + f" total={total:.2f} {load}")
        return 0
    ahead = sum(float(x) for name in glob.glob(os.path.join(ahead_log, "*")) for x in open(name))
    if ahead:
        # (parsed ahead beside the index, on the N - 1 cores it leaves free; the rest of the
        # workers' CPU after it: the prefilter and the analysis)
        index = cpu.get("index", [0.0, 0.0])[0]
        rest = {k: v for k, v in cpu.items() if k not in ("prefilter", "analysis")}
        p = cpu.get("prefilter", [0.0, 0.0])[0] + cpu.get("analysis", [0.0, 0.0])[0]
        w = cpu.get("analysis", [0.0, 0.0])[1] - ahead + max(0.0, ahead - index * (jobs - 1))
        path = sum(max(a, (a + b) / jobs) for a, b in rest.values()) + max(p, (p + w) / jobs)
    else:
        path = sum(max(p, (p + w) / jobs) for p, w in cpu.values())
    print("CPU s per phase, parent+workers: " + " ".join(f"{k}={p:.2f}+{w:.2f}" for k, (p, w) in cpu.items())
          + (f" (of which parsed ahead during the index {ahead:.2f})" if ahead else "")
          + f" total={total:.2f}; critical path on {jobs} cores {path:.1f} s {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
