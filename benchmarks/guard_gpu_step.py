"""The guard's cost on a real accelerator training step, and whether program fingerprints agree.

    python benchmarks/guard_gpu_step.py [--blocks 20] [--steps 200] [--skip-fingerprints]

Meant for the GPU machine (it runs on the CPU too, as a smoke test). Needs flax and optax.

1. Step overhead, fast mode. One process (the machine has one GPU, and two processes cannot
   share one GPU in an NCCL collective), with JAX's real coordination service
   (`jax.distributed.initialize("127.0.0.1:PORT", 1, 0)`) and the guard's exchange threads
   publishing to it, standing in for one process of N: every call of the guarded functions is
   recorded on the hot path exactly as a cross-process dispatch is (the wrapper is told they run
   across processes; in a real N-process job JAX's hooks tell it). The same functions under
   JAX's own jit run beside them in the same process, in alternating blocks, against drift.
   Per block and variant:
     - tiny:   an elementwise jit on a 1024x1024 array, median per dispatch (no wait);
     - step:   a flax MLP + optax Adam training step, median of step-and-wait;
     - loop:   the same step chained as a training loop runs it (asynchronous dispatch, one
               wait at the end of the block), mean per step.
   The exchange threads' time (publishing, comparing) is measured apart, as busy ms per second.
2. Fingerprints (`--skip-fingerprints` to leave out): two processes started at the same time on
   the same device each compile the same programs (the MLP step, a conv net step, a large
   matmul), with autotuning as configured, and print for each the optimized program's
   fingerprint, the traced program's hash (taken by the guard's compiler hook) and the guard's
   identity. Per-process autotuning can pick different kernels, so the optimized fingerprints may
   differ (measured on an H100 with JAX 0.11.2: they did); the guard's identity uses the traced
   program (`runtime_guard.signature.exec_key`), which must be the same in both processes, and so
   must the identity: a correct program must stay silent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime_guard.settings import GuardSettings  # after the path; imports no JAX

GUARD_INTERVAL = GuardSettings().interval



def _models():
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(1024)(x))
            x = nn.relu(nn.Dense(1024)(x))
            return nn.Dense(10)(x)

    class ConvNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(64, (3, 3))(x))
            x = nn.relu(nn.Conv(64, (3, 3), strides=2)(x))
            x = x.mean(axis=(1, 2))
            return nn.Dense(10)(x)

    def trainer(model, x, y):
        tx = optax.adam(1e-3)
        params = model.init(jax.random.PRNGKey(0), x)
        opt = tx.init(params)

        def make():
            # A fresh function per round: JAX's dispatch cache is keyed by the function object.
            def train_step(params, opt, x, y):
                def loss_fn(p):
                    logits = model.apply(p, x)
                    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

                loss, grads = jax.value_and_grad(loss_fn)(params)
                updates, opt = tx.update(grads, opt, params)
                return optax.apply_updates(params, updates), opt, loss

            return train_step

        return make, params, opt

    rng = jax.random.PRNGKey(1)
    x = jax.random.normal(rng, (256, 784), jnp.float32)
    y = jax.random.randint(rng, (256,), 0, 10)
    xi = jax.random.normal(rng, (32, 32, 32, 3), jnp.float32)
    yi = jax.random.randint(rng, (32,), 0, 10)
    return (trainer(MLP(), x, y), x, y), (trainer(ConvNet(), xi, yi), xi, yi)


def _enlist(guard) -> dict:
    """Make this single process's guard run as one of N does: exchange threads on the real
    coordination service (with N = 1 they publish and compare against no one). Returns a dict
    whose "busy" counts the seconds those threads spend publishing and comparing."""
    from runtime_guard import compat
    from runtime_guard.exchange import Exchange
    from runtime_guard.kv import KV

    guard.process_index, guard.num_processes = 0, 1
    ex = Exchange(KV(compat.distributed_client()), guard.recorder, guard.registry, 0, 1,
                  guard.settings, guard._on_verdict)
    busy = {"busy": 0.0, "cpu": 0.0, "rounds": 0}
    for name in ("publish", "compare_round"):
        orig = getattr(ex, name)

        def timed(*a, _orig=orig, **k):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return _orig(*a, **k)
            finally:
                busy["busy"] += time.perf_counter() - t0
                busy["cpu"] += time.thread_time() - c0  # CPU, not waits on the service
                busy["rounds"] += 1

        setattr(ex, name, timed)
    guard.exchange = ex
    if not os.environ.get("MCJAX_BENCH_NO_EXCHANGE"):  # --no-exchange: the hot path alone
        ex.start()
    guard.active = True
    return busy


def _time_tiny(tiny, a, calls: int) -> float:
    """Median µs per dispatch of `tiny(a)`, not waiting for it (the queue drained every 16)."""
    clock = time.perf_counter_ns
    ts = []
    for i in range(calls):
        t0 = clock()
        t = tiny(a)
        ts.append(clock() - t0)
        if i % 16 == 15:
            t.block_until_ready()
    t.block_until_ready()
    return statistics.median(ts) / 1e3


def _time_step(step, p, o, x, y, steps: int) -> tuple[float, object, object]:
    """Median µs of a training step called and waited for; the state it leaves."""
    clock = time.perf_counter_ns
    ts = []
    for _i in range(steps):
        t0 = clock()
        p, o, loss = step(p, o, x, y)
        loss.block_until_ready()
        ts.append(clock() - t0)
    return statistics.median(ts) / 1e3, p, o


def _time_loop(step, p, o, x, y, steps: int) -> tuple[float, object, object]:
    """Mean µs per step of `steps` chained asynchronously with one wait at the end."""
    import jax

    t0 = time.perf_counter_ns()
    for _i in range(steps):
        p, o, loss = step(p, o, x, y)
    jax.block_until_ready((p, o, loss))
    return (time.perf_counter_ns() - t0) / steps / 1e3, p, o


def measure(blocks: int, steps: int, port: int, interval: float) -> dict:
    """Guarded and unguarded functions side by side in one guarded process, in alternating blocks
    (which one goes first alternates too), so that the machine's drift and the exchange threads'
    share of the GIL hit both alike; the threads' own time is measured apart."""
    import jax
    import jax.numpy as jnp

    import runtime_guard
    from runtime_guard.guard import _MULTI, GuardedJit
    from runtime_guard.settings import GuardSettings

    jax.distributed.initialize(f"127.0.0.1:{port}", 1, 0)
    (mlp, x, y), _ = _models()
    make_step, params, opt = mlp
    a = jnp.ones((1024, 1024), jnp.float32)
    g = runtime_guard.install(GuardSettings(mode="fast", quiet=True, state_dir=tempfile.mkdtemp(), interval=interval))
    busy = _enlist(g)
    plain_jit = jax.jit.__wrapped__  # JAX's own jit, under the guard's wrapper
    fns = {"unguarded": (plain_jit(make_step()), plain_jit(lambda v: v * 2.0 + 1.0)),
           "fast": (jax.jit(make_step()), jax.jit(lambda v: v * 2.0 + 1.0))}
    state = {}
    for variant, (step, tiny) in fns.items():
        p, o = params, opt
        for _w in range(3):  # compile, then the cached path
            p, o, loss = step(p, o, x, y)
            t = tiny(a)
        jax.block_until_ready((p, o, loss, t))
        state[variant] = (p, o)
        if variant == "fast":
            assert isinstance(step, GuardedJit) and isinstance(tiny, GuardedJit)
            step._kind = tiny._kind = _MULTI  # record every call, as for a cross-process step
    seq0, t_start = g.recorder.seq, time.perf_counter()
    busy0, cpu0 = busy["busy"], busy["cpu"]
    res: dict[str, list[float]] = {}
    for b in range(blocks):
        for variant in (("unguarded", "fast") if b % 2 == 0 else ("fast", "unguarded")):
            step, tiny = fns[variant]
            p, o = state[variant]
            res.setdefault(f"tiny/{variant}", []).append(_time_tiny(tiny, a, steps * 4))
            t, p, o = _time_step(step, p, o, x, y, steps)
            res.setdefault(f"step/{variant}", []).append(t)
            t, p, o = _time_loop(step, p, o, x, y, steps)
            res.setdefault(f"loop/{variant}", []).append(t)
            state[variant] = (p, o)
    wall = time.perf_counter() - t_start
    out = {k: statistics.median(v) for k, v in res.items()}
    out["blocks"] = res
    out["recorded"] = g.recorder.seq - seq0
    out["threads_busy_ms_per_s"] = (busy["busy"] - busy0) / wall * 1e3
    out["threads_cpu_ms_per_s"] = (busy["cpu"] - cpu0) / wall * 1e3
    out["thread_rounds"] = busy["rounds"]
    out["wall_s"] = wall
    out["device"] = str(jax.devices()[0].device_kind)
    out["platform"] = jax.devices()[0].platform
    out["jax"] = jax.__version__
    runtime_guard.uninstall()
    return out


def wrappers(blocks: int, steps: int) -> dict:
    """Which part of the hot path costs what on a real step: wrappers that do progressively more
    of what the guard's hot path does, side by side with JAX's own jit and the guard's wrapper,
    in alternating blocks in one process (no exchange threads). Median per call (call and wait
    for the step; dispatch only for tiny), per variant, the median over blocks."""
    import jax
    import jax.numpy as jnp

    from runtime_guard import compat
    from runtime_guard import guard as gmod
    from runtime_guard.settings import GuardSettings

    (mlp, x, y), _ = _models()
    make_step, params, opt = mlp
    g = gmod.Guard(GuardSettings(quiet=True, state_dir=tempfile.mkdtemp()))
    g.active, g.num_processes = True, 1
    rec, sites, getframe = g.recorder, g._sites, sys._getframe
    shapes = compat.make_arg_shapes()
    concrete = compat.concrete_result

    class Bare:
        def __init__(self, f):
            self.f = f

        def __call__(self, *a, **k):
            return self.f(*a, **k)

    class Frame(Bare):
        def __call__(self, *a, **k):
            fr = getframe(1)
            sites.get((id(fr.f_code) << 32) | fr.f_lasti)
            return self.f(*a, **k)

    class Shapes(Bare):
        def __call__(self, *a, **k):
            fr = getframe(1)
            sites.get((id(fr.f_code) << 32) | fr.f_lasti)
            12345 ^ shapes(a)
            return self.f(*a, **k)

    class Record(Bare):
        def __call__(self, *a, **k):
            fr = getframe(1)
            sites.get((id(fr.f_code) << 32) | fr.f_lasti)
            key = 12345 ^ shapes(a)
            rec.record_at(key, 0, 1, 1)
            return self.f(*a, **k)

    class Concrete(Bare):
        def __call__(self, *a, **k):
            fr = getframe(1)
            sites.get((id(fr.f_code) << 32) | fr.f_lasti)
            key = 12345 ^ shapes(a)
            pre = rec.record_at(key, 0, 1, 1)
            out = self.f(*a, **k)
            concrete(out)
            rec.settled = pre
            return out

    variants = {"jax.jit": lambda f: jax.jit(f), "bare wrapper": lambda f: Bare(jax.jit(f)),
                "+ frame, site": lambda f: Frame(jax.jit(f)), "+ shape hash": lambda f: Shapes(jax.jit(f)),
                "+ record": lambda f: Record(jax.jit(f)), "+ result check": lambda f: Concrete(jax.jit(f)),
                "GuardedJit": lambda f: gmod.GuardedJit(jax.jit(f), g)}
    a = jnp.ones((1024, 1024), jnp.float32)
    fns = {}
    for name, mk in variants.items():
        step, tiny = mk(make_step()), mk(lambda v: v * 2.0 + 1.0)
        p, o = params, opt
        for _w in range(3):
            p, o, loss = step(p, o, x, y)
            t = tiny(a)
        jax.block_until_ready((p, o, loss, t))
        if isinstance(step, gmod.GuardedJit):
            step._kind = tiny._kind = gmod._MULTI
        fns[name] = [step, tiny, p, o]
    res: dict[str, list[float]] = {}
    names = list(variants)
    for b in range(blocks):
        for name in (names if b % 2 == 0 else names[::-1]):
            step, tiny, p, o = fns[name]
            res.setdefault(f"tiny/{name}", []).append(_time_tiny(tiny, a, steps * 2))
            t, p, o = _time_step(step, p, o, x, y, steps)
            res.setdefault(f"step/{name}", []).append(t)
            fns[name][2:] = [p, o]
    out = {"names": names}
    for w in ("tiny", "step"):
        base = res[f"{w}/jax.jit"]
        for name in names:
            # Paired per block against jax.jit in the same block, then the median over blocks.
            out[f"{w}/{name}"] = statistics.median(res[f"{w}/{name}"])
            out[f"{w}/{name}/added"] = statistics.median(v - u for v, u in zip(res[f"{w}/{name}"], base))
    return out


def fingerprints() -> dict:
    import jax

    from runtime_guard import compat
    from runtime_guard.signature import exec_key

    hooks = compat.DispatchHooks()  # the compiler hook takes the traced program's hash
    hooks.install(on_execute=lambda er, args: None, allow_fastpath=lambda ex: True, on_compiled_call=None,
                  wrap_jit=None)

    def row(c, name: str) -> dict:
        ex = compat.compiled_mesh_executable(c)
        info = compat.exec_info_from_mesh_executable(ex, name)
        return {"optimized": compat.program_fingerprint(ex.xla_executable), "traced": info.program if info.traced else "-",
                "identity": f"{exec_key(info):016x}", "platform": info.platform}

    (mlp, x, y), (conv, xi, yi) = _models()
    out = {}
    for name, (make, params, opt), xs, ys in (("mlp_step", mlp, x, y), ("conv_step", conv, xi, yi)):
        out[name] = row(jax.jit(make()).lower(params, opt, xs, ys).compile(), name)
    a = jax.random.normal(jax.random.PRNGKey(2), (4096, 4096), jax.numpy.bfloat16)
    out["matmul_bf16"] = row(jax.jit(lambda u, v: u @ v).lower(a, a).compile(), "matmul")
    hooks.uninstall()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--steps", type=int, default=200, help="steps per block and variant")
    ap.add_argument("--skip-fingerprints", action="store_true")
    ap.add_argument("--interval", type=float, default=GUARD_INTERVAL,
                    help="the guard's publish interval (default: the guard's own)")
    ap.add_argument("--no-exchange", action="store_true",
                    help="do not start the exchange threads (the hot path alone)")
    ap.add_argument("--parts", action="store_true",
                    help="instead: wrappers doing progressively more of the hot path, side by side")
    ap.add_argument("--worker", choices=("measure", "fingerprints", "wrappers"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "measure":
        print("RESULT " + json.dumps(measure(a.blocks, a.steps, a.port, a.interval)), flush=True)
        return
    if a.worker == "wrappers":
        print("RESULT " + json.dumps(wrappers(a.blocks, a.steps)), flush=True)
        return
    if a.worker == "fingerprints":
        print("RESULT " + json.dumps(fingerprints()), flush=True)
        return

    from runtime_guard.launcher import free_port

    if a.no_exchange:
        os.environ["MCJAX_BENCH_NO_EXCHANGE"] = "1"  # read by the worker

    def result(out: str) -> dict:
        lines = [line[7:] for line in out.splitlines() if line.startswith("RESULT ")]
        if not lines:
            sys.exit("a worker failed")
        return json.loads(lines[-1])

    if a.parts:
        r = result(subprocess.run([sys.executable, __file__, "--worker", "wrappers", "--blocks", str(a.blocks),
                                   "--steps", str(a.steps)], stdout=subprocess.PIPE, text=True, timeout=1200, check=False).stdout)
        print(f"hot path part by part, {a.blocks} alternating blocks; median per call (µs) and added vs jax.jit "
              f"(paired per block, median)")
        print(f"{'variant':<16} {'tiny':>8} {'added':>7} {'step':>8} {'added':>7}")
        for name in r["names"]:
            print(f"{name:<16} {r[f'tiny/{name}']:8.2f} {r[f'tiny/{name}/added']:7.2f} "
                  f"{r[f'step/{name}']:8.1f} {r[f'step/{name}/added']:7.2f}")
        return
    r = result(subprocess.run([sys.executable, __file__, "--worker", "measure", "--blocks", str(a.blocks),
                               "--steps", str(a.steps), "--port", str(free_port()), "--interval", str(a.interval)],
                              stdout=subprocess.PIPE, text=True, timeout=1200, check=False).stdout)
    print(f"mcjax guard, fast mode, on {r['device']} ({r['platform']}, JAX {r['jax']}): one process on the real "
          f"coordination service, the guarded functions' calls recorded as cross-process dispatches; guarded and "
          f"unguarded functions alternating in {a.blocks} blocks in the same process; medians over blocks; "
          f"publish interval {a.interval} s")
    print(f"{'workload':<34} {'unguarded µs':>13} {'fast µs':>9} {'added µs':>9} {'fast/ung':>9}")
    labels = {"tiny": "tiny jit, dispatch only", "step": "MLP+Adam step, call and wait",
              "loop": "MLP+Adam step, async loop (/step)"}
    for w, label in labels.items():
        u, f = r[f"{w}/unguarded"], r[f"{w}/fast"]
        print(f"{label:<34} {u:13.1f} {f:9.1f} {f - u:9.2f} {f / u:9.3f}")
    print(f"  recorded {r['recorded']} dispatches in {r['wall_s']:.1f} s; the exchange threads spent "
          f"{r['threads_busy_ms_per_s']:.2f} ms per second publishing and comparing ({r['thread_rounds']} calls), "
          f"of which {r['threads_cpu_ms_per_s']:.2f} ms of CPU (the rest waits on the coordination service): "
          f"an upper bound on the GIL time they take from the training loop")
    for w in labels:
        us, fs = r["blocks"][f"{w}/unguarded"], r["blocks"][f"{w}/fast"]
        print(f"  {w} blocks (unguarded/fast µs): " + ", ".join(f"{u:.1f}/{f:.1f}" for u, f in zip(us, fs)))
    if a.skip_fingerprints:
        return
    # Two processes on one GPU: neither may take most of its memory up front.
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "fingerprints"], stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    fps = [result(p.communicate(timeout=900)[0]) for p in procs]
    print("fingerprints of the same programs compiled by two processes at once:")
    for name in fps[0]:
        f0, f1 = fps[0][name], fps[1][name]
        print(f"  {name:<12} {f0['platform']}: " + "; ".join(
            f"{k} {f0[k]} / {f1[k]} ({'same' if f0[k] == f1[k] else 'DIFFERENT'})"
            for k in ("optimized", "traced", "identity")))


if __name__ == "__main__":
    main()
