# Copyright 2026 The zbrokers Authors.
"""Consensus (CCp100) client, worker and broker.

A consensus request goes to every worker registered for its service; it
succeeds only when all of them answer success, and the client then gets
every worker's frames.

    import zbrokers

    reactor = zbrokers.Reactor()
    broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*")
    worker = zbrokers.ConsensusWorker(reactor, broker.endpoint, b"echo",
                                      lambda frames: frames)
    client = zbrokers.ConsensusClient(reactor, broker.endpoint)

    def on_reply(result):
        print(result.ok, result.frames, result.reason)
        reactor.stop()

    client.request(b"echo", [b"hello"], on_reply, timeout=2.0)
    reactor.run()

All three belong to the reactor's thread; their callbacks run there.  Only
`Reply` objects (see ConsensusWorker's with_reply) may be used from any
thread.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any, Callable, List, Optional, Sequence, Union

from . import _native as n
from ._common import (Answer, Broker, Child, Entry, Outcome, blocking_call,
                      client_options, endpoint_list, hand_over,
                      renamed_keywords, seconds_to_us, success_frames)
from .curve import CurveKeys, c_keys, c_keys_struct
from .reactor import Reactor

__all__ = ["Result", "ConsensusClient", "ConsensusWorker", "ConsensusBroker",
           "Reply", "WorkerError"]

_OUTCOMES = {0: "success", 1: "failure", 2: "timeout"}
_FAILED_BY = {0: None, 1: "worker", 2: "broker", 3: "client"}


class Result(Outcome):
    """The outcome of one consensus request.

    ok        True when every worker answered success.
    frames    On success every worker's frames (in the broker's worker
              order).  On a worker failure the failing worker's frames; on
              a broker failure [code, text]; empty on timeout.
    reason    "" on success.  Otherwise why: the broker's code
              ("zb:no-workers", "zb:timeout", ...; such codes start with
              "zb:"), the client's ("zb:client-closed", ...), the failing
              worker's first frame, or "timeout" when the client gave up.
    outcome   "success", "failure" or "timeout".
    failed_by None, "worker", "broker" or "client".
    attempts  How many times the request was sent.
    """

    __slots__ = ("ok", "outcome", "failed_by", "reason", "frames", "attempts")

    def __init__(self, outcome: str, failed_by: Optional[str], reason: str,
                 frames: List[bytes], attempts: int) -> None:
        self.ok = outcome == "success"
        self.outcome = outcome
        self.failed_by = failed_by
        self.reason = reason
        self.frames = frames
        self.attempts = attempts

    def _why(self) -> str:
        return (f"by={self.failed_by} reason={self.reason!r} "
                f"frames={self.frames!r}")


class ConsensusClient(Child):
    """Sends requests to a consensus broker.

    Every request ends exactly once: on_reply(result) runs on the reactor
    thread with a Result (never inside request() itself).

    endpoint: one broker ("tcp://host:5556"), or several as a
    comma-separated str or a sequence of str ("tcp://a:5556,tcp://b:5556",
    at most 64, no duplicate).  endpoint_policy says what the client does
    with several (docs/ha.md):
      "failover"  one broker at a time, the first one first; when the
                  client gives up on it (attempts timing out in a row with
                  nothing heard, as for a reopen) it moves to the next one
                  and re-sends what is outstanding by its usual rules
                  (retries).  The default; what a fail-over pair needs.
      "spread"    requests round-robin over every connected broker, a dead
                  one skipped: many independent brokers, never a pair.
    curve: CURVE keys for a broker's CURVE endpoint (docs/security.md).
    """

    _kind = "consensus client"
    _destroy = "zb_consensus_client_destroy"

    def __init__(self, reactor: Reactor, endpoint: Union[str, Sequence[str]],
                 *, curve: Optional[CurveKeys] = None,
                 endpoint_policy: str = "failover") -> None:
        eps = endpoint_list(endpoint)
        options = client_options(endpoint_policy, c_keys_struct(curve))
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_consensus_client_new_ex(
            reactor._handle(), eps, ctypes.byref(options), ctypes.byref(ptr)))
        self._init_child(reactor, ptr)
        self.endpoint = eps.decode("utf-8")
        self.endpoint_policy = endpoint_policy

    def request(self, service: Union[bytes, str], frames: Sequence[bytes],
                on_reply: Callable[[Result], None], timeout: float = 5.0,
                retries: int = 0, retry_no_workers: bool = False) -> None:
        """Sends `frames` to every worker of `service`.  Each attempt waits
        `timeout` seconds; a timed-out attempt is sent again up to `retries`
        times (so workers may see a request more than once).

        retry_no_workers: when the broker answers "zb:no-workers" (no worker
        has registered yet, e.g. the client started together with its
        workers), send again with a growing backoff (10 ms doubling, at most
        0.5 s) within the attempt's timeout; then the result is that
        "zb:no-workers".  Off by default: the broker's immediate answer tells
        at once that a service has no workers."""
        svc = n.encode(service, "service")
        count, data, sizes, _keep = n.frames_in(frames)
        timeout_us = seconds_to_us(timeout, "timeout")

        def deliver(result, failed_by, reason, attempts, out_frames):
            on_reply(Result(_OUTCOMES.get(result, "failure"),
                            _FAILED_BY.get(failed_by), reason, out_frames,
                            attempts))

        flags = n.ZB_REQUEST_RETRY_NO_WORKERS if retry_no_workers else 0
        hand_over(Entry(self._reactor, deliver, "consensus reply"),
                  lambda user: n.lib.zb_consensus_client_request_flags(
                      self._handle(), svc, len(svc), count, data, sizes,
                      timeout_us, int(retries), flags,
                      n.consensus_reply_trampoline, user, n.free_trampoline))

    def call(self, service: Union[bytes, str], frames: Sequence[bytes] = (),
             timeout: float = 5.0, retries: int = 0,
             retry_no_workers: bool = False) -> Result:
        """Sends a request and returns its Result: request() for simple
        scripts.  It runs the reactor until the outcome is there (other
        timers, sockets, workers and brokers on the reactor run meanwhile,
        so a script may keep its broker and workers on the same reactor).
        Bounded: every request ends within about timeout x (retries + 1).
        Reactor thread; not from inside a callback (StateError) and not
        on a reactor that zbrokers.aio drives (await
        zbrokers.aio.request() there)."""
        return blocking_call(self._reactor, lambda done: self.request(
            service, frames, done, timeout=timeout, retries=retries,
            retry_no_workers=retry_no_workers))

    def ping(self, on_result: Callable[[bool], None],
             timeout: float = 5.0) -> None:
        """Sends PING; on_result(True) when the broker echoes it in time,
        on_result(False) when not (or when the client closes first)."""
        def deliver(code, _message):
            on_result(code == n.ZB_OK)

        hand_over(Entry(self._reactor, deliver, "consensus ping"),
                  lambda user: n.lib.zb_consensus_client_ping(
                      self._handle(), seconds_to_us(timeout, "timeout"),
                      n.status_trampoline, user, n.free_trampoline))

    @property
    def open_requests(self) -> int:
        count = ctypes.c_size_t(0)
        n.check(n.lib.zb_consensus_client_open_requests(
            self._handle(), ctypes.byref(count)))
        return count.value

    @property
    def failovers(self) -> int:
        """"failover": how many times the client moved to the next broker
        of its endpoint list (0 with one endpoint, and with "spread")."""
        count = ctypes.c_uint64(0)
        n.check(n.lib.zb_consensus_client_failovers(self._handle(),
                                                    ctypes.byref(count)))
        return count.value


class WorkerError(Exception):
    """Raise it from a worker handler to fail a request with exactly these
    frames (bytes or str): `raise WorkerError(b"bad-input", b"details")`.
    The first frame becomes the client's result.reason.  Any other
    exception fails the request with one frame, "TypeName: message"."""

    def __init__(self, *frames: Union[bytes, str]) -> None:
        super().__init__(*frames)
        self.frames = [f.encode("utf-8") if isinstance(f, str) else bytes(f)
                       for f in frames]


def _failure_frames(exc: BaseException) -> List[bytes]:
    if isinstance(exc, WorkerError):
        return exc.frames or [b"WorkerError"]
    return [f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")]


class Reply(Answer):
    """The answer to one request, for handlers that answer later.

    Exactly one of succeed()/fail() takes effect; later calls return False.
    Thread-safe: may be handed to and answered from any thread.  A Reply
    dropped without an answer fails its request ("worker:unanswered").
    """

    _discard_fn = "zb_responder_discard"

    def succeed(self, frames: Sequence[bytes] = ()) -> bool:
        """Answers success with these frames.  Returns False if this reply
        was already answered."""
        return self._answer(n.lib.zb_responder_succeed,
                            success_frames(frames))

    def fail(self, reason: Union[bytes, str, Sequence[bytes],
                                 BaseException] = b"failed") -> bool:
        """Answers failure.  `reason` is an exception, one bytes/str frame,
        or a list of bytes frames.  The first frame must not start with
        "zb:" (reserved for the broker)."""
        if isinstance(reason, BaseException):
            frames = _failure_frames(reason)
        elif isinstance(reason, str):
            frames = [reason.encode("utf-8")]
        elif isinstance(reason, (bytes, bytearray, memoryview)):
            frames = [bytes(reason)]
        else:
            frames = list(reason)
        return self._answer(n.lib.zb_responder_fail, frames)

    def discard(self) -> None:
        self._give_back()


class ConsensusWorker(Child):
    """Serves one service of a consensus broker, or of several at once.

    endpoint: one broker ("tcp://host:5556"), or several as a
    comma-separated str or a sequence of str: the worker then registers
    with every one of them (a connection each, with its own heartbeats and
    reconnects) and answers each request to the broker it came from
    (docs/consensus.md, "One worker, many brokers").

    handler(frames) runs on the reactor thread for every request: return a
    list of bytes frames to answer success (None answers one empty frame),
    raise to answer failure (WorkerError chooses the frames).

    With with_reply=True the handler is handler(frames, reply) and answers
    through the Reply -- at once or later, from any thread; an exception
    raised before it answered fails the request.

    The worker heartbeats every heartbeat_interval seconds and reconnects
    after heartbeat_liveness silent intervals (the broker drops it after as
    many); heartbeat= and retries= are their deprecated names.  curve:
    CURVE keys for a broker's CURVE endpoint (docs/security.md).
    """

    _kind = "consensus worker"
    _destroy = "zb_consensus_worker_destroy"

    @renamed_keywords(heartbeat="heartbeat_interval",
                      retries="heartbeat_liveness")
    def __init__(self, reactor: Reactor,
                 endpoint: Union[str, Sequence[str]],
                 service: Union[bytes, str], handler: Callable[..., Any], *,
                 with_reply: bool = False, heartbeat_interval: float = 1.0,
                 heartbeat_liveness: int = 3,
                 curve: Optional[CurveKeys] = None) -> None:
        svc = n.encode(service, "service")
        eps = endpoint_list(endpoint)
        self.service = svc
        # One broker, or every broker of a list (one session each).
        self.endpoint = eps.decode("utf-8")
        # Weak: the handler lives in the global callback registry until the
        # worker is destroyed and must not keep the reactor alive.
        reactor_ref = weakref.ref(reactor)

        def on_request(token, frames):
            reply = Reply(token)
            if with_reply:
                try:
                    handler(frames, reply)
                except Exception as e:
                    if not reply.fail(e):
                        raise  # already answered: a bug worth reporting
                return
            try:
                value = handler(frames)
            except Exception as e:
                reply.fail(e)
                return
            try:
                out = success_frames(value)
                reply.succeed(out)
            except TypeError as e:
                reply.fail(e)
                r = reactor_ref()
                if r is not None:
                    r._report(e, "consensus handler")

        ptr = ctypes.c_void_p()
        keys = c_keys(curve)
        hand_over(Entry(reactor, on_request, "consensus handler"),
                  lambda user: n.lib.zb_consensus_worker_new_curve(
                      reactor._handle(), eps, svc,
                      len(svc),
                      seconds_to_us(heartbeat_interval, "heartbeat_interval"),
                      int(heartbeat_liveness), keys,
                      n.consensus_handler_trampoline,
                      user, n.free_trampoline, ctypes.byref(ptr)))
        self._init_child(reactor, ptr)


class ConsensusBroker(Broker):
    """An in-process consensus broker on a reactor (for tests, tools and
    small deployments; zb-broker is the daemon).

    request_timeout: a request not answered by every worker in this many
    seconds fails with "zb:timeout".  log(level, line), when given, gets
    every log line ("debug", "info", "warning", "error"); by default
    warnings and errors go to stderr.
    """

    _kind = "consensus broker"
    _destroy = "zb_consensus_broker_destroy"
    _set_log = "zb_consensus_broker_set_log"
    _bind = "zb_consensus_broker_bind"
    _worker_count = "zb_consensus_broker_worker_count"

    def __init__(self, reactor: Reactor, endpoint: Optional[str] = None, *,
                 request_timeout: float = 5.0,
                 log: Optional[Callable[[str, str], None]] = None) -> None:
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_consensus_broker_new(
            reactor._handle(), seconds_to_us(request_timeout,
                                             "request_timeout"),
            ctypes.byref(ptr)))
        self._init_broker(reactor, ptr, endpoint, log)
