# Copyright 2026 The zbrokers Authors.
"""Majordomo (MDP/0.1, ZeroMQ RFC 7) client, worker and broker.

A Majordomo request goes to one idle worker of its service.  The protocol is
the standard one, so these interoperate with any MDP peer in any language.

    reactor = zbrokers.Reactor()
    broker = zbrokers.MdpBroker(reactor, "tcp://127.0.0.1:*")
    zbrokers.MdpWorker(reactor, broker.endpoint, b"echo", lambda f: f)
    client = zbrokers.MdpClient(reactor, broker.endpoint)
    client.request(b"echo", [b"hi"], lambda result: print(result.frames))

MDP has no failure reply.  A request the handler does not answer -- it
raised (the exception goes to the reactor's error handler), returned
something that is not frames, or let its MdpReply go unsent -- is given
back: the worker sends the broker DISCONNECT and reconnects, and the broker
redispatches the request (or drops one that failed max_redispatch times);
the same policy as the C++ and C workers (docs/majordomo.md).  To tell the
client that its request failed, answer it: MdpReply.error(exc) replies
[b"zb:worker-error", b"TypeName: message"].  All three belong to the
reactor's thread; only MdpReply objects may be used from any thread.
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

__all__ = ["MdpClient", "MdpWorker", "MdpBroker", "MdpReply", "MdpResult",
           "WORKER_ERROR"]

# The first frame of the reply a worker sends when its handler raised.
WORKER_ERROR = b"zb:worker-error"

_OUTCOMES = {n.ZB_OK: "success", n.ZB_ERR_TIMEOUT: "timeout",
             n.ZB_ERR_CANCELLED: "cancelled"}


class MdpResult(Outcome):
    """The outcome of one MDP request.

    ok       True when a reply came (whatever it says).
    frames   The reply frames ([] unless ok).
    reason   "" when ok, else why: "timeout" (no reply after all retries),
             "cancelled" (the client was closed first), or an error text.
    outcome  "success", "timeout", "cancelled" or "failure".
    """

    __slots__ = ("ok", "frames", "reason", "outcome")

    def __init__(self, code: int, message: str, frames: List[bytes]) -> None:
        self.ok = code == n.ZB_OK
        self.outcome = _OUTCOMES.get(code, "failure")
        self.frames = frames
        if self.ok:
            self.reason = ""
        elif self.outcome in ("timeout", "cancelled"):
            self.reason = self.outcome
        else:
            self.reason = message or "failure"



class MdpClient(Child):
    """An asynchronous Majordomo client: many requests in flight on one
    socket.  on_reply(MdpResult) runs on the reactor thread exactly once
    per request, never inside request().

    timeout/retries are the defaults per request: when a request times out
    the client reopens its socket and resends what is outstanding, up to
    `retries` times for that request.  Each reply completes the request it
    answers: with zb-broker through request tags, with any other MDP broker
    by keeping one request per service on the wire (docs/majordomo.md).

    endpoint: one broker, or several as a comma-separated str or a
    sequence of str (at most 64, no duplicate).  endpoint_policy says what
    the client does with several (docs/ha.md): "failover" (the default)
    talks to one broker at a time and moves to the next one of the list
    when a request times out there, re-sending what is outstanding;
    "spread" sends requests round-robin over every connected broker.
    curve: CURVE keys for a broker's CURVE endpoint (docs/security.md).
    """

    _kind = "majordomo client"
    _destroy = "zb_mdp_client_destroy"

    def __init__(self, reactor: Reactor, endpoint: Union[str, Sequence[str]],
                 *, timeout: float = 2.5, retries: int = 0,
                 curve: Optional[CurveKeys] = None,
                 endpoint_policy: str = "failover") -> None:
        eps = endpoint_list(endpoint)
        options = client_options(endpoint_policy, c_keys_struct(curve))
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_mdp_client_new_ex(
            reactor._handle(), eps, seconds_to_us(timeout, "timeout"),
            int(retries), ctypes.byref(options), ctypes.byref(ptr)))
        self._init_child(reactor, ptr)
        self.endpoint = eps.decode("utf-8")
        self.endpoint_policy = endpoint_policy

    def request(self, service: Union[bytes, str], frames: Sequence[bytes],
                on_reply: Callable[[MdpResult], None],
                timeout: Optional[float] = None) -> None:
        """Sends `frames` to one worker of `service` ("mmi.service" asks
        the broker whether a service exists: b"200" or b"404")."""
        svc = n.encode(service, "service")
        count, data, sizes, _keep = n.frames_in(frames)
        timeout_us = 0 if timeout is None else seconds_to_us(timeout,
                                                             "timeout")
        if timeout is not None and timeout_us <= 0:
            raise n.InvalidArgumentError(n.ZB_ERR_INVALID,
                                         "timeout must be > 0")

        def deliver(code, message, out_frames):
            on_reply(MdpResult(code, message, out_frames))

        hand_over(Entry(self._reactor, deliver, "majordomo reply"),
                  lambda user: n.lib.zb_mdp_client_request(
                      self._handle(), svc, len(svc), count, data, sizes,
                      timeout_us, n.mdp_reply_trampoline, user,
                      n.free_trampoline))

    def call(self, service: Union[bytes, str], frames: Sequence[bytes] = (),
             timeout: Optional[float] = None) -> MdpResult:
        """Sends a request and returns its MdpResult, running the reactor
        until it is there (see ConsensusClient.call()): for simple
        scripts.  Reactor thread; not from inside a callback, not on a
        reactor that zbrokers.aio drives."""
        return blocking_call(self._reactor, lambda done: self.request(
            service, frames, done, timeout=timeout))

    @property
    def outstanding(self) -> int:
        count = ctypes.c_size_t(0)
        n.check(n.lib.zb_mdp_client_outstanding(self._handle(),
                                                ctypes.byref(count)))
        return count.value

    @property
    def failovers(self) -> int:
        """"failover": how many times the client moved to the next broker
        of its endpoint list; "spread": how many times a broker came to
        look dead.  0 with one endpoint."""
        count = ctypes.c_uint64(0)
        n.check(n.lib.zb_mdp_client_failovers(self._handle(),
                                              ctypes.byref(count)))
        return count.value


def _error_frames(exc: BaseException) -> List[bytes]:
    return [WORKER_ERROR,
            f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")]


class MdpReply(Answer):
    """The reply to one MDP request, for handlers that answer later.

    send(), error() or discard() may be called once, from any thread.  A
    worker serves one request at a time: the broker sends it nothing else
    until it replied.  An MdpReply dropped without an answer is discarded:
    the request is given back to the broker (see the module docstring).
    """

    _discard_fn = "zb_mdp_replier_discard"

    def send(self, frames: Sequence[bytes] = ()) -> bool:
        """Sends the reply.  Returns False when already sent."""
        return self._answer(n.lib.zb_mdp_reply, success_frames(frames))

    def error(self, exc: BaseException) -> bool:
        """Replies [b"zb:worker-error", b"TypeName: message"]."""
        return self.send(_error_frames(exc))

    def discard(self) -> bool:
        """Gives the request back unanswered: the worker reconnects and the
        broker redispatches it.  Returns False when already answered."""
        return self._give_back()


class MdpWorker(Child):
    """Serves one Majordomo service, on one broker or several at once.

    endpoint: one broker ("tcp://host:5555"), or several as a
    comma-separated str or a sequence of str: the worker then registers
    with every one of them (a connection each, with its own heartbeats and
    reconnects) and replies to each request through the broker it came
    from.  One request at a time holds per broker, so the handler may hold
    one request of each broker at once (docs/majordomo.md, "One worker,
    many brokers").

    handler(frames) runs on the reactor thread for every request and returns
    the reply frames (None answers one empty frame).  If it raises, the
    exception goes to the reactor's error handler and the request is given
    back to the broker (module docstring).  With with_reply=True it is
    handler(frames, reply) and answers through the MdpReply, at once or
    later from any thread.

    heartbeat_interval (seconds) must match the broker's; the worker
    reconnects after heartbeat_liveness silent intervals, waiting
    `reconnect_delay` seconds first.  (heartbeat= and liveness= are the
    deprecated names of the two.)  curve: CURVE keys for a broker's CURVE
    endpoint (docs/security.md).
    """

    _kind = "majordomo worker"
    _destroy = "zb_mdp_worker_destroy"

    @renamed_keywords(heartbeat="heartbeat_interval",
                      liveness="heartbeat_liveness")
    def __init__(self, reactor: Reactor,
                 endpoint: Union[str, Sequence[str]],
                 service: Union[bytes, str], handler: Callable[..., Any], *,
                 with_reply: bool = False, heartbeat_interval: float = 2.5,
                 heartbeat_liveness: int = 3, reconnect_delay: float = 1.0,
                 curve: Optional[CurveKeys] = None) -> None:
        svc = n.encode(service, "service")
        eps = endpoint_list(endpoint)
        self.service = svc
        # One broker, or every broker of a list (one session each).
        self.endpoint = eps.decode("utf-8")
        reactor_ref = weakref.ref(reactor)

        def give_back(reply, exc):
            # Unanswered: the request goes back to the broker, and the
            # exception to the reactor's error handler.
            reply.discard()
            r = reactor_ref()
            if r is not None:
                r._report(exc, "majordomo handler")

        def on_request(token, frames):
            reply = MdpReply(token)
            if with_reply:
                try:
                    handler(frames, reply)
                except Exception as e:
                    give_back(reply, e)
                return
            try:
                value = handler(frames)
            except Exception as e:
                give_back(reply, e)
                return
            try:
                # send() checks the frames before it uses the token.
                reply.send(value)
            except TypeError as e:
                give_back(reply, e)

        ptr = ctypes.c_void_p()
        keys = c_keys(curve)
        hand_over(Entry(reactor, on_request, "majordomo handler"),
                  lambda user: n.lib.zb_mdp_worker_new_curve(
                      reactor._handle(), eps, svc,
                      len(svc),
                      seconds_to_us(heartbeat_interval, "heartbeat_interval"),
                      int(heartbeat_liveness),
                      seconds_to_us(reconnect_delay, "reconnect_delay"), keys,
                      n.mdp_handler_trampoline, user, n.free_trampoline,
                      ctypes.byref(ptr)))
        self._init_child(reactor, ptr)


class MdpBroker(Broker):
    """An in-process Majordomo broker (RFC 7 + MMI) on a reactor.

    heartbeat_interval: the heartbeat interval (seconds) workers must use;
    heartbeat_liveness: silent intervals before a worker is dropped
    (heartbeat= and liveness= are their deprecated names).  log(level,
    line), when given, gets log lines and worker joins/leaves; by default
    warnings go to stderr.
    """

    _kind = "majordomo broker"
    _destroy = "zb_mdp_broker_destroy"
    _set_log = "zb_mdp_broker_set_log"
    _bind = "zb_mdp_broker_bind"
    _worker_count = "zb_mdp_broker_worker_count"

    @renamed_keywords(heartbeat="heartbeat_interval",
                      liveness="heartbeat_liveness")
    def __init__(self, reactor: Reactor, endpoint: Optional[str] = None, *,
                 heartbeat_interval: float = 2.5, heartbeat_liveness: int = 3,
                 log: Optional[Callable[[str, str], None]] = None) -> None:
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_mdp_broker_new(
            reactor._handle(),
            seconds_to_us(heartbeat_interval, "heartbeat_interval"),
            int(heartbeat_liveness), ctypes.byref(ptr)))
        self._init_broker(reactor, ptr, endpoint, log)
