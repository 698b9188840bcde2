# Pipeline-parallel serving: every PP stage aborts timed-out running requests using its own per-stage entry times
# Source: https://github.com/sgl-project/sglang/pull/28881
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ServerArgs:
    hidden: int = 4
    max_running: int = 4
    running_timeout_steps: int = 3     # SGLANG_REQ_RUNNING_TIMEOUT, in scheduler iterations
    num_steps: int = 6
    admit_step: tuple = (0, 0, 1, 2)   # scheduler iteration at which each request is received (by every stage)


@dataclass
class Req:
    rid: int
    forward_entry_time: int            # when this stage first ran the request (per stage)


class PPStageScheduler:
    def __init__(self, args, stage):
        self.args, self.stage = args, stage
        self.running = []
        self.aborted = []

    def admit(self, now):
        for rid, t in enumerate(self.args.admit_step):
            if t == now:
                # the request's first forward on stage s runs s iterations after stage 0's
                self.running.append(Req(rid, forward_entry_time=now + self.stage))

    def _abort_on_running_timeout(self, now):
        timed_out = [r.rid for r in self.running
                     if now - r.forward_entry_time >= self.args.running_timeout_steps]
        return timed_out

    def apply_aborts(self, rids):
        self.aborted += [r for r in rids if r not in self.aborted]
        self.running = [r for r in self.running if r.rid not in rids]

    def proxy_tensors(self, now):
        rids = sorted(r.rid for r in self.running if r.rid not in self.aborted)
        h = np.array([[rid + 1.0 + 0.1 * now] * self.args.hidden for rid in rids], np.float32)
        return rids, h.reshape(len(rids), self.args.hidden)


@jax.jit
def stage_forward(h):
    return jnp.tanh(h) * 2.0


def event_loop_pp(args, stage):
    sched = PPStageScheduler(args, stage)
    outputs = []
    for now in range(args.num_steps):
        sched.admit(now)
        timed_out = sched._abort_on_running_timeout(now)
        sched.apply_aborts(timed_out)
        rids, h = sched.proxy_tensors(now)
        # pp_proxy_tensors: the stages exchange the hidden states of the requests they are running
        exchanged = multihost_utils.process_allgather(np.asarray(stage_forward(h)))
        outputs.append(round(float(np.asarray(exchanged).sum()), 3))
    return outputs, sorted(sched.aborted)


def main():
    args = ServerArgs()
    outputs, aborted = event_loop_pp(args, jax.process_index())
    multihost_utils.sync_global_devices("pp loop done")
    print("RESULT step_outputs", outputs)
    print("RESULT aborted", aborted)


if __name__ == "__main__":
    main()
