"""Across hosts: every host's supervisor ships its processes' stacks to one collector, so that one
report covers the whole job.

The collector is a small gRPC service run by the supervisor on the host of process 0, bound to the
interface the JAX coordinator uses (`bind_host_for(coordinator_address)`), port chosen by the OS.
Each request carries the job token in its metadata (compared in constant time); without it the
request is refused. Messages are JSON (no generated protobuf code): one `Submit` per host and report,
with that host's ProcessReports (stacks included).

    # process-0 host
    server = StackCollectorServer(bind_host_for(coord), token)
    ... publish server.address (e.g. the guard puts it in the coordination-service KV store) ...
    received, missing = server.wait(report_id, expected_hosts, deadline_s=15)
    processes = local + [p for ps in received.values() for p in ps]
    write_postmortem(kind, processes, {}, report_dir, missing_hosts=missing)

    # every other host
    send_stacks(address, token, host, report_id, processes_with_snapshots, timeout=5)

A host that never answers is listed as missing once the deadline passes; nothing waits forever
(every call has a deadline). `python -m runtime_guard.stacks.remote send ...` collects local stacks
and sends them, for a supervisor written in something else or for testing.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable

import grpc

from runtime_guard.report.model import ProcessReport

SERVICE = "mcjax.StackCollector"
SUBMIT = f"/{SERVICE}/Submit"
ALIVE = f"/{SERVICE}/Alive"
TOKEN_KEY = "mcjax-token"
MAX_MESSAGE = 64 << 20  # native stacks of many processes stay far below this


def bind_host_for(coordinator_address: str) -> str:
    """The local address on the interface that reaches the coordinator: the coordinator's own
    address when it is this host, otherwise the address the OS would use to reach it."""
    host = coordinator_address.rsplit(":", 1)[0].strip("[]") or "127.0.0.1"
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        return host
    if ip.startswith("127."):
        return ip
    # A UDP "connect" sends nothing; it only selects the outgoing interface.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((ip, 9))
            return s.getsockname()[0]
        except OSError:
            return ip


class StackCollectorServer:
    """Receives other hosts' stacks for a report; see the module docstring."""

    def __init__(self, bind_host: str, token: str, port: int = 0, max_workers: int = 4) -> None:
        if not token:
            raise ValueError("a job token is required")
        self._token = token.encode()
        self._lock = threading.Condition()
        self._received: dict[str, dict[str, list[ProcessReport]]] = {}  # report_id -> host -> processes
        self._alive: dict[int, float] = {}  # process index -> when its host's supervisor last saw it running
        self._gone: dict[int, float] = {}  # process index -> when its host's supervisor first saw it end
        self._verdict = b"{}"  # the reply to liveness notes: the job's verdict once there is one
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="mcjax-collector"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)],
        )
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Submit": grpc.unary_unary_rpc_method_handler(self._submit),  # raw bytes in and out
                      "Alive": grpc.unary_unary_rpc_method_handler(self._alive_ping)}
        )
        self._server.add_generic_rpc_handlers((handler,))
        self.port = self._server.add_insecure_port(f"{_bracket(bind_host)}:{port}")
        if not self.port:
            raise OSError(f"cannot listen on {bind_host}:{port}")
        self.address = f"{_bracket(bind_host)}:{self.port}"
        self._server.start()

    def _check_token(self, context: grpc.ServicerContext) -> None:
        meta = dict(context.invocation_metadata())
        if not hmac.compare_digest(str(meta.get(TOKEN_KEY, "")).encode(), self._token):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "wrong or missing job token")

    def _alive_ping(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """Another host's supervisor: these processes of mine are running (their OS processes
        exist and are not zombies), whether or not their guard threads can publish; and these
        (`gone`) have ended. Only `gone` says a process is dead: notes that stop coming say
        nothing (the supervisor may be starved of CPU, or its notes delayed)."""
        self._check_token(context)
        try:
            msg = json.loads(request)
            indices = [int(p) for p in msg["alive"]]
            ended = [int(p) for p in msg.get("gone") or ()]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed liveness message: {e}")
        now = time.monotonic()  # system-wide on Linux: the reader, on this host, compares with its own
        with self._lock:
            for p in indices:
                self._alive[p] = now
                self._gone.pop(p, None)
            for p in ended:
                if p not in indices:
                    self._gone.setdefault(p, now)
            return self._verdict

    def set_verdict(self, report: dict) -> None:
        """From now on, answer every liveness note with this report: a host whose process cannot
        deliver it (frozen, its guard broken) learns it from here and sends its stacks."""
        data = json.dumps({"verdict": report}, default=str).encode()
        with self._lock:
            self._verdict = data

    def alive_times(self) -> dict[int, float]:
        """Process index -> when (this host's monotonic clock) its supervisor last reported it running."""
        with self._lock:
            return dict(self._alive)

    def gone_times(self) -> dict[int, float]:
        """Process index -> when (this host's monotonic clock) its supervisor first reported it ended."""
        with self._lock:
            return dict(self._gone)

    def _submit(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        self._check_token(context)
        try:
            msg = json.loads(request)
            host = str(msg["host"])
            report_id = str(msg["report_id"])
            procs = [ProcessReport.from_dict(p) for p in msg["processes"]]
        except (ValueError, KeyError, TypeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed stacks message: {e}")
        for p in procs:
            p.host = p.host or host
        with self._lock:
            self._received.setdefault(report_id, {})[host] = procs
            self._lock.notify_all()
        return json.dumps({"ok": True, "processes": len(procs)}).encode()

    def wait(self, report_id: str, hosts: Iterable[str], deadline_s: float) -> tuple[dict[str, list[ProcessReport]], list[str]]:
        """({host: processes} received for `report_id`, [hosts still missing]) once every host in
        `hosts` has sent or `deadline_s` seconds have passed."""
        want = set(hosts)
        end = time.monotonic() + deadline_s
        with self._lock:
            while True:
                got = self._received.get(report_id, {})
                left = end - time.monotonic()
                if want <= set(got) or left <= 0:
                    return dict(got), sorted(want - set(got))
                self._lock.wait(min(left, 0.5))

    def wait_processes(self, report_id: str, indices: Iterable[int], deadline_s: float) -> dict[str, list[ProcessReport]]:
        """Like `wait`, when the expected senders are known by process index rather than host:
        returns once the received processes cover `indices` or at the deadline."""
        want = set(indices)
        end = time.monotonic() + deadline_s
        with self._lock:
            while True:
                got = self._received.get(report_id, {})
                have = {p.process_index for ps in got.values() for p in ps}
                left = end - time.monotonic()
                if want <= have or left <= 0:
                    return dict(got)
                self._lock.wait(min(left, 0.5))

    def stop(self, grace: float = 0.5) -> None:
        self._server.stop(grace).wait(grace + 1)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def send_stacks(address: str, token: str, host: str, report_id: str, processes: Iterable[ProcessReport],
                timeout: float = 5.0) -> int:
    """Ship this host's processes (with their snapshots) to the collector. Returns how many the
    collector stored; raises grpc.RpcError (e.g. UNAVAILABLE, DEADLINE_EXCEEDED,
    PERMISSION_DENIED) when it could not, after at most `timeout` seconds."""
    payload = json.dumps({"host": host, "report_id": report_id, "processes": [p.to_dict() for p in processes]},
                         default=str).encode()
    options = [("grpc.max_send_message_length", MAX_MESSAGE), ("grpc.max_receive_message_length", MAX_MESSAGE)]
    with grpc.insecure_channel(address, options=options) as channel:
        call = channel.unary_unary(SUBMIT)  # raw bytes in and out
        reply = call(payload, timeout=timeout, metadata=((TOKEN_KEY, token),), wait_for_ready=True)
    return int(json.loads(reply).get("processes", 0))


class AliveSender:
    """Another host's supervisor tells process 0's collector which of its processes are running,
    on one long-lived channel, from a background thread: a slow or absent collector never
    stalls the supervisor, and a send still in flight is not repeated."""

    def __init__(self, address: str, token: str) -> None:
        self._channel = grpc.insecure_channel(address)
        self._call = self._channel.unary_unary(ALIVE)
        self._token = token
        self._busy = threading.Lock()
        self.last_error: str | None = None
        self.verdict: dict | None = None  # the job's verdict, when the collector has one

    def send(self, indices: Iterable[int], gone: Iterable[int] = (), timeout: float = 2.0,
             force: bool = False) -> threading.Thread | None:
        """Note `indices` running and `gone` ended. `force`: even while a note is in flight (a
        process's end must not be dropped); returns the sending thread, to join before closing."""
        if not self._busy.acquire(blocking=False):
            if not force:
                return None
            locked = False
        else:
            locked = True
        payload = json.dumps({"alive": sorted(indices), "gone": sorted(gone)}).encode()

        def run() -> None:
            try:
                reply = json.loads(self._call(payload, timeout=timeout, metadata=((TOKEN_KEY, self._token),)))
                if isinstance(reply, dict) and isinstance(reply.get("verdict"), dict):
                    self.verdict = reply["verdict"]
                self.last_error = None
            except ValueError as e:
                self.last_error = f"malformed reply: {e}"
            except grpc.RpcError as e:
                self.last_error = f"{e.code().name}: {e.details()}"
            finally:
                if locked:
                    self._busy.release()

        t = threading.Thread(target=run, name="mcjax-alive", daemon=True)
        t.start()
        return t

    def close(self) -> None:
        self._channel.close()


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runtime_guard.stacks.remote",
                                 description="Collect this host's stacks and send them to the job's collector.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--address", required=True, help="collector host:port")
    s.add_argument("--token-env", default="MCJAX_JOB_TOKEN", help="environment variable holding the job token")
    s.add_argument("--host", default=socket.gethostname())
    s.add_argument("--report-id", required=True)
    s.add_argument("--target", action="append", default=[], metavar="INDEX:PID[:FALLBACK_FILE]")
    s.add_argument("--native", choices=("yes", "no", "first"), default="first")
    s.add_argument("--snapshots", type=int, default=2)
    s.add_argument("--interval", type=float, default=2.0)
    s.add_argument("--timeout", type=float, default=5.0, help="seconds for the send")
    a = ap.parse_args(argv)
    token = os.environ.get(a.token_env, "")
    if not token:
        print(f"no job token in ${a.token_env}", file=sys.stderr)
        return 2
    from runtime_guard.stacks.collect import collect_stacks

    targets = []
    for t in a.target:
        idx, pid, *rest = t.split(":", 2)
        targets.append((int(idx), int(pid), rest[0] if rest else None))
    native: Any = {"yes": True, "no": False, "first": "first"}[a.native]
    stacks = collect_stacks(targets, native=native, snapshots=a.snapshots, interval=a.interval)
    procs = [ProcessReport(process_index=i, pid=pid, host=a.host, snapshots=stacks.get(i, [])) for i, pid, _ in targets]
    try:
        n = send_stacks(a.address, token, a.host, a.report_id, procs, timeout=a.timeout)
    except grpc.RpcError as e:
        print(f"could not send stacks to {a.address}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    print(f"sent {n} processes to {a.address}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
