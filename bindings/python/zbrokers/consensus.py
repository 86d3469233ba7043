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
import threading
import weakref
from typing import Any, Callable, List, Optional, Sequence, Union

from . import _native as n
from ._native import StateError
from .curve import CurveKeys, c_keys
from .reactor import Reactor, _Entry

__all__ = ["Result", "ConsensusClient", "ConsensusWorker", "ConsensusBroker",
           "Reply", "WorkerError"]

_OUTCOMES = {0: "success", 1: "failure", 2: "timeout"}
_FAILED_BY = {0: None, 1: "worker", 2: "broker", 3: "client"}
_LOG_LEVELS = {0: "debug", 1: "info", 2: "warning", 3: "error"}


def _seconds_to_us(seconds: float, what: str) -> int:
    try:
        us = int(round(float(seconds) * 1e6))
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number of seconds") from None
    return us


class Result:
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

    @property
    def timed_out(self) -> bool:
        return self.outcome == "timeout"

    def __repr__(self) -> str:
        if self.ok:
            return f"<Result ok frames={self.frames!r}>"
        return (f"<Result {self.outcome} by={self.failed_by} "
                f"reason={self.reason!r} frames={self.frames!r}>")


class _Child:
    """Common lifetime handling for objects owned by a reactor."""

    _kind = "object"
    _destroy = None  # name of the zb_*_destroy function

    def _init_child(self, reactor: Reactor, ptr: ctypes.c_void_p):
        self._reactor = reactor
        self._ptr = ptr
        reactor._adopt(self)

    def _handle(self) -> ctypes.c_void_p:
        if self._ptr is None:
            raise StateError(n.ZB_ERR_STATE, f"the {self._kind} is closed")
        return self._ptr

    def _detach(self) -> None:
        self._ptr = None

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def reactor(self) -> Reactor:
        return self._reactor

    def close(self) -> None:
        """Destroys it (reactor thread; also allowed from inside its own
        callbacks).  Idempotent.  Closing the reactor closes it too."""
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        n.check(getattr(n.lib, self._destroy)(ptr))

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else "open"
        return f"<zbrokers.{type(self).__name__} {state}>"


class ConsensusClient(_Child):
    """Sends requests to a consensus broker.

    Every request ends exactly once: on_reply(result) runs on the reactor
    thread with a Result (never inside request() itself).
    """

    _kind = "consensus client"
    _destroy = "zb_consensus_client_destroy"

    def __init__(self, reactor: Reactor, endpoint: str, *,
                 curve: Optional[CurveKeys] = None) -> None:
        # curve: CURVE keys for a broker's CURVE endpoint (docs/security.md).
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_consensus_client_new_curve(
            reactor._handle(), n.encode(endpoint, "endpoint"), c_keys(curve),
            ctypes.byref(ptr)))
        self._init_child(reactor, ptr)
        self.endpoint = endpoint

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
        timeout_us = _seconds_to_us(timeout, "timeout")

        def deliver(result, failed_by, reason, attempts, out_frames):
            on_reply(Result(_OUTCOMES.get(result, "failure"),
                            _FAILED_BY.get(failed_by), reason, out_frames,
                            attempts))

        key = n.register(_Entry(self._reactor, deliver, "consensus reply"))
        flags = n.ZB_REQUEST_RETRY_NO_WORKERS if retry_no_workers else 0
        rc = n.lib.zb_consensus_client_request_flags(
            self._handle(), svc, len(svc), count, data, sizes, timeout_us,
            int(retries), flags, n.consensus_reply_trampoline, n.as_user(key),
            n.free_trampoline)
        if rc != n.ZB_OK:
            n.unregister(key)
            raise n.error_for(rc)

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
        return _call(self._reactor, lambda done: self.request(
            service, frames, done, timeout=timeout, retries=retries,
            retry_no_workers=retry_no_workers))

    def ping(self, on_result: Callable[[bool], None],
             timeout: float = 5.0) -> None:
        """Sends PING; on_result(True) when the broker echoes it in time,
        on_result(False) when not (or when the client closes first)."""
        def deliver(code, _message):
            on_result(code == n.ZB_OK)

        key = n.register(_Entry(self._reactor, deliver, "consensus ping"))
        rc = n.lib.zb_consensus_client_ping(
            self._handle(), _seconds_to_us(timeout, "timeout"),
            n.status_trampoline, n.as_user(key), n.free_trampoline)
        if rc != n.ZB_OK:
            n.unregister(key)
            raise n.error_for(rc)

    @property
    def open_requests(self) -> int:
        count = ctypes.c_size_t(0)
        n.check(n.lib.zb_consensus_client_open_requests(
            self._handle(), ctypes.byref(count)))
        return count.value


def _call(reactor: Reactor, start: Callable[[Callable[[Any], None]], None]
          ) -> Any:
    """Starts an asynchronous operation and runs `reactor` until it calls
    back; returns what it called back with (the blocking call()s)."""
    if reactor._driver is not None:
        raise RuntimeError("call() would block the asyncio loop that runs "
                           "this reactor; use await zbrokers.aio.request()")
    box: List[Any] = []
    start(box.append)
    # Each request ends exactly once (success, failure or its own
    # timeout), so this wait is bounded by the request's options.
    reactor.run_until(lambda: bool(box))
    return box[0]


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


def _success_frames(value) -> list:
    if value is None:
        return []
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes(value)]
    if isinstance(value, str):
        raise TypeError("a handler must return bytes frames, not str")
    return list(value)


class Reply:
    """The answer to one request, for handlers that answer later.

    Exactly one of succeed()/fail() takes effect; later calls return False.
    Thread-safe: may be handed to and answered from any thread.  A Reply
    dropped without an answer fails its request ("worker:unanswered").
    """

    def __init__(self, token: int) -> None:
        self._token: Optional[int] = token
        self._lock = threading.Lock()

    @property
    def pending(self) -> bool:
        return self._token is not None

    def _take(self) -> Optional[int]:
        with self._lock:
            token, self._token = self._token, None
        return token

    def succeed(self, frames: Sequence[bytes] = ()) -> bool:
        """Answers success with these frames.  Returns False if this reply
        was already answered."""
        count, data, sizes, _keep = n.frames_in(_success_frames(frames))
        token = self._take()
        if token is None:
            return False
        n.check(n.lib.zb_responder_succeed(token, count, data, sizes))
        return True

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
        count, data, sizes, _keep = n.frames_in(frames)
        token = self._take()
        if token is None:
            return False
        n.check(n.lib.zb_responder_fail(token, count, data, sizes))
        return True

    def discard(self) -> None:
        token = self._take()
        if token is not None:
            n.lib.zb_responder_discard(token)

    def __del__(self):
        try:
            self.discard()
        except Exception:
            pass


class ConsensusWorker(_Child):
    """Serves one service of a consensus broker.

    handler(frames) runs on the reactor thread for every request: return a
    list of bytes frames to answer success (None answers one empty frame),
    raise to answer failure (WorkerError chooses the frames).

    With with_reply=True the handler is handler(frames, reply) and answers
    through the Reply -- at once or later, from any thread; an exception
    raised before it answered fails the request.

    heartbeat/retries: the worker heartbeats every `heartbeat` seconds and
    reconnects after `retries` silent intervals (the broker drops it after
    as many).  curve: CURVE keys for a broker's CURVE endpoint
    (docs/security.md).
    """

    _kind = "consensus worker"
    _destroy = "zb_consensus_worker_destroy"

    def __init__(self, reactor: Reactor, endpoint: str,
                 service: Union[bytes, str], handler: Callable[..., Any], *,
                 with_reply: bool = False, heartbeat: float = 1.0,
                 retries: int = 3, curve: Optional[CurveKeys] = None) -> None:
        svc = n.encode(service, "service")
        self.service = svc
        self.endpoint = endpoint
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
                out = _success_frames(value)
                reply.succeed(out)
            except TypeError as e:
                reply.fail(e)
                r = reactor_ref()
                if r is not None:
                    r._report(e, "consensus handler")

        key = n.register(_Entry(reactor, on_request, "consensus handler"))
        ptr = ctypes.c_void_p()
        keys = c_keys(curve)
        rc = n.lib.zb_consensus_worker_new_curve(
            reactor._handle(), n.encode(endpoint, "endpoint"), svc, len(svc),
            _seconds_to_us(heartbeat, "heartbeat"), int(retries), keys,
            n.consensus_handler_trampoline, n.as_user(key), n.free_trampoline,
            ctypes.byref(ptr))
        if rc != n.ZB_OK:
            n.unregister(key)
            raise n.error_for(rc)
        self._init_child(reactor, ptr)


class ConsensusBroker(_Child):
    """An in-process consensus broker on a reactor (for tests, tools and
    small deployments; zb-broker is the daemon).

    request_timeout: a request not answered by every worker in this many
    seconds fails with "zb:timeout".  log(level, line), when given, gets
    every log line ("debug", "info", "warning", "error"); by default
    warnings and errors go to stderr.
    """

    _kind = "consensus broker"
    _destroy = "zb_consensus_broker_destroy"

    def __init__(self, reactor: Reactor, endpoint: Optional[str] = None, *,
                 request_timeout: float = 5.0,
                 log: Optional[Callable[[str, str], None]] = None) -> None:
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_consensus_broker_new(
            reactor._handle(), _seconds_to_us(request_timeout,
                                              "request_timeout"),
            ctypes.byref(ptr)))
        self._init_child(reactor, ptr)
        self.endpoints: List[str] = []
        if log is not None:
            key = n.register(_Entry(
                reactor, lambda level, line: log(
                    _LOG_LEVELS.get(level, "error"), line), "broker log"))
            rc = n.lib.zb_consensus_broker_set_log(
                ptr, n.log_trampoline, n.as_user(key), n.free_trampoline)
            if rc != n.ZB_OK:
                n.unregister(key)
                self.close()
                raise n.error_for(rc)
        if endpoint is not None:
            try:
                self.bind(endpoint)
            except BaseException:
                self.close()
                raise

    def bind(self, endpoint: str) -> str:
        """Binds another endpoint; returns it resolved (actual port)."""
        buf = ctypes.create_string_buffer(1024)
        n.check(n.lib.zb_consensus_broker_bind(
            self._handle(), n.encode(endpoint, "endpoint"), buf, len(buf)))
        resolved = buf.value.decode("utf-8")
        self.endpoints.append(resolved)
        return resolved

    @property
    def endpoint(self) -> str:
        """The first bound endpoint."""
        if not self.endpoints:
            raise StateError(n.ZB_ERR_STATE, "the broker is not bound")
        return self.endpoints[0]

    def worker_count(self, service: Union[bytes, str]) -> int:
        svc = n.encode(service, "service")
        count = ctypes.c_size_t(0)
        n.check(n.lib.zb_consensus_broker_worker_count(
            self._handle(), svc, len(svc), ctypes.byref(count)))
        return count.value
