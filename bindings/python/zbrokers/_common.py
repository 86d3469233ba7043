# Copyright 2026 The zbrokers Authors.
"""What the public modules of zbrokers share (private to the package).

reactor.py, consensus.py and majordomo.py each import from here and never
from one another's privates:

  Entry            a Python callable as C calls it, with the reactor's
                   error policy; hand_over() gives one to a C call.
  Child            the handle of a C object that lives on a Reactor: closed
                   by close() or together with its reactor (Socket, the
                   clients, workers and brokers).
  Broker           Child plus what both in-process brokers have: the log
                   hook, bind()/endpoints/endpoint, worker_count().
  Answer           the one-shot, any-thread token a worker handler answers
                   through (Reply, MdpReply).
  Outcome          what Result and MdpResult have in common.
  seconds_to_us()  the one conversion from Python seconds to C microseconds.
  endpoint_list()  a client's or worker's endpoint= (a str, or a sequence
                   of str naming several brokers) as the C functions take
                   it: one comma-separated list.
  client_options() a client's endpoint_policy= ("failover" or "spread")
                   and CURVE keys as the zb_client_options_t of its C
                   constructor.
  blocking_call()  runs a reactor until an asynchronous request called back
                   (the blocking call()s).
  success_frames() what a handler returned, as reply frames.
  renamed_keywords() keeps a renamed keyword argument working, with a
                   DeprecationWarning naming the new one.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import warnings
import weakref
from typing import (TYPE_CHECKING, Any, Callable, List, Optional, Sequence,
                    Union)

from . import _native as n
from ._native import StateError

if TYPE_CHECKING:  # reactor.py imports this module
    from .reactor import Reactor

__all__ = ["Answer", "Broker", "Child", "Entry", "Outcome", "blocking_call",
           "client_options", "default_error_handler", "endpoint_list",
           "ENDPOINT_POLICIES", "hand_over",
           "renamed_keywords",
           "seconds_to_us", "success_frames"]

# The C log levels (zb.h, ZB_LOG_*) by name, as a Python log hook gets them.
_LOG_LEVELS = {0: "debug", 1: "info", 2: "warning", 3: "error"}


def seconds_to_us(seconds: float, what: str) -> int:
    """`seconds` (any real number) in whole microseconds; TypeError naming
    `what` when it is not a number."""
    try:
        us = int(round(float(seconds) * 1e6))
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number of seconds") from None
    return us


def endpoint_list(endpoint: Union[str, Sequence[str]]) -> bytes:
    """The broker endpoint(s) of a client or worker, encoded for C: a str
    as it is (it may already be a comma-separated list), a sequence of str
    joined with ",".  The C library checks the list (zb::SplitEndpointList:
    no empty item, no duplicate, at most 64); TypeError for anything but a
    str or a sequence of str."""
    if isinstance(endpoint, (str, bytes, bytearray)):
        return n.encode(endpoint, "endpoint")
    try:
        items = list(endpoint)
    except TypeError:
        raise TypeError("endpoint must be a str or a sequence of str, not "
                        f"{type(endpoint).__name__}") from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError("endpoint must be a str or a sequence of str; "
                            f"it holds a {type(item).__name__}")
    return ",".join(items).encode("utf-8")


# What a client does with several brokers in its endpoint list (zb.h
# ZB_ENDPOINT_*, docs/ha.md): the default first.
ENDPOINT_POLICIES = ("failover", "spread")


def client_options(endpoint_policy: str,
                   curve_struct: Optional[ctypes.Structure]
                   ) -> "n.ClientOptions":
    """The zb_client_options_t of a client: `endpoint_policy` checked
    ("failover" or "spread", exactly, as everywhere else: TypeError for a
    non-str, InvalidArgumentError (a ValueError) for another word), and
    `curve_struct` (a zb_curve_keys_t, or None for plaintext), which the
    returned options keep alive."""
    if not isinstance(endpoint_policy, str):
        raise TypeError("endpoint_policy must be a str (\"failover\" or "
                        f"\"spread\"), not {type(endpoint_policy).__name__}")
    policy = ctypes.c_int(0)
    if n.lib.zb_endpoint_policy_parse(endpoint_policy.encode("utf-8"),
                                      ctypes.byref(policy)) != n.ZB_OK:
        raise n.InvalidArgumentError(
            n.ZB_ERR_INVALID,
            f"endpoint_policy must be \"failover\" (one broker at a time, "
            f"the next one when it fails) or \"spread\" (round-robin over "
            f"every live broker), not {endpoint_policy!r}")
    options = n.ClientOptions()
    n.check(n.lib.zb_client_options_init(ctypes.byref(options)))
    options.endpoint_policy = policy.value
    if curve_struct is not None:
        options.curve = ctypes.addressof(curve_struct)
        options._keep = curve_struct  # alive as long as the options
    return options


def renamed_keywords(**old_to_new: str) -> Callable[[Any], Any]:
    """Decorates a function (a class's __init__) whose keyword arguments
    were renamed: renamed_keywords(heartbeat="heartbeat_interval").  An old
    keyword still works: its value goes to the new one, with a
    DeprecationWarning naming both, attributed to the caller's line.  Both
    spellings in one call is a TypeError.  The signature the decorated
    function shows (help(), inspect) has only the new names."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        owner = fn.__qualname__
        if owner.endswith(".__init__"):
            owner = owner[:-len(".__init__")]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{owner}() got both {old}= and {new}=; {old}= is "
                        f"the deprecated name of {new}=")
                warnings.warn(f"{owner}({old}=) is deprecated, use {new}= "
                              "(docs/glossary.md)", DeprecationWarning,
                              stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        return wrapper
    return decorate


def default_error_handler(exc: BaseException, where: str) -> None:
    sys.stderr.write(f"zbrokers: exception in a {where} callback "
                     "(the reactor carries on):\n")
    sys.excepthook(type(exc), exc, exc.__traceback__)
    sys.stderr.flush()


class Entry:
    """A Python callable as seen from C: runs it with the reactor's error
    policy.  Registered in the callback registry under an integer key."""

    __slots__ = ("reactor_ref", "fn", "kind", "on_release", "__weakref__")

    def __init__(self, reactor: "Reactor", fn, kind: str, on_release=None):
        # Weak: an entry lives in the global registry until C frees it and
        # must not keep the reactor alive.
        self.reactor_ref = weakref.ref(reactor)
        self.fn = fn
        self.kind = kind
        self.on_release = on_release

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except Exception as e:  # reported, never lost, never fatal
            reactor = self.reactor_ref()
            if reactor is not None:
                reactor._report(e, self.kind)
            else:
                default_error_handler(e, self.kind)
        except BaseException as e:  # KeyboardInterrupt, SystemExit
            reactor = self.reactor_ref()
            if reactor is not None:
                reactor._interrupt(e)
        return None

    def released(self):
        if self.on_release is not None:
            self.on_release()


def hand_over(entry: Entry, c_call: Callable[[int], int]) -> None:
    """Registers `entry` and runs c_call(user): a C call that takes the
    user key and frees it through free_trampoline when it is done with it.
    When the call fails, or raises before C got the key (a closed handle),
    the key is dropped here and the error raised."""
    key = n.register(entry)
    try:
        n.check(c_call(n.as_user(key)))
    except BaseException:
        n.unregister(key)
        raise


class Child:
    """The handle of a C object owned by a reactor.

    Subclasses name the object (_kind, for "the ... is closed") and its C
    destroy function (_destroy), and call _init_child() once the C object
    exists.  Closing the reactor destroys the C object and detaches the
    handle (Reactor.close calls _detach)."""

    _kind = "object"
    _destroy = ""  # name of the zb_*_destroy (or zb_socket_close) function

    def _init_child(self, reactor: "Reactor", ptr: ctypes.c_void_p) -> None:
        self._reactor = reactor
        self._ptr: Optional[ctypes.c_void_p] = ptr
        reactor._adopt(self)

    def _handle(self) -> ctypes.c_void_p:
        if self._ptr is None:
            raise StateError(n.ZB_ERR_STATE, f"the {self._kind} is closed")
        return self._ptr

    def _detach(self) -> None:
        # The reactor is being destroyed and takes the C object with it.
        self._ptr = None

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def reactor(self) -> "Reactor":
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


class Broker(Child):
    """What ConsensusBroker and MdpBroker share.  A subclass creates its C
    broker with its own options, then calls _init_broker(); it names its C
    functions in _destroy, _set_log, _bind and _worker_count."""

    _set_log = ""
    _bind = ""
    _worker_count = ""

    def _init_broker(self, reactor: "Reactor", ptr: ctypes.c_void_p,
                     endpoint: Optional[str],
                     log: Optional[Callable[[str, str], None]]) -> None:
        self._init_child(reactor, ptr)
        self.endpoints: List[str] = []
        try:
            if log is not None:
                def hook(level: int, line: str) -> None:
                    log(_LOG_LEVELS.get(level, "error"), line)

                set_log = getattr(n.lib, self._set_log)
                hand_over(Entry(reactor, hook, "broker log"),
                          lambda user: set_log(ptr, n.log_trampoline, user,
                                               n.free_trampoline))
            if endpoint is not None:
                self.bind(endpoint)
        except BaseException:
            self.close()
            raise

    def bind(self, endpoint: str) -> str:
        """Binds another endpoint; returns it resolved (actual port)."""
        buf = ctypes.create_string_buffer(1024)
        n.check(getattr(n.lib, self._bind)(
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
        """How many workers are registered for `service` now."""
        svc = n.encode(service, "service")
        count = ctypes.c_size_t(0)
        n.check(getattr(n.lib, self._worker_count)(
            self._handle(), svc, len(svc), ctypes.byref(count)))
        return count.value


class Answer:
    """A token through which a worker answers one request, once, from any
    thread (Reply, MdpReply).  Subclasses name the C function that gives
    the token back unanswered (_discard_fn) and define discard(); dropping
    an unanswered one discards it."""

    _discard_fn = ""

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

    def _answer(self, c_answer: Callable[..., int],
                frames: Sequence[bytes]) -> bool:
        # The frames are checked before the token is taken, so that a
        # wrong answer leaves the request open for a right one.
        count, data, sizes, _keep = n.frames_in(frames)
        token = self._take()
        if token is None:
            return False
        n.check(c_answer(token, count, data, sizes))
        return True

    def _give_back(self) -> bool:
        token = self._take()
        if token is None:
            return False
        getattr(n.lib, self._discard_fn)(token)
        return True

    def __del__(self):
        try:
            self.discard()
        except Exception:
            pass


class Outcome:
    """The outcome of one request: ok, outcome ("success", "timeout", ...),
    reason and frames are set by the subclass, which says in _why() what a
    repr of a failed one shows."""

    __slots__ = ()

    @property
    def timed_out(self) -> bool:
        return self.outcome == "timeout"

    def _why(self) -> str:
        return f"reason={self.reason!r}"

    def __repr__(self) -> str:
        name = type(self).__name__
        if self.ok:
            return f"<{name} ok frames={self.frames!r}>"
        return f"<{name} {self.outcome} {self._why()}>"


def blocking_call(reactor: "Reactor",
                  start: Callable[[Callable[[Any], None]], None]) -> Any:
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


def success_frames(value: Any) -> list:
    """What a handler returned, as a list of reply frames: None is [], one
    bytes-like object is one frame, anything else an iterable of frames
    (str is refused: its encoding would be a guess)."""
    if value is None:
        return []
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes(value)]
    if isinstance(value, str):
        raise TypeError("a handler must return bytes frames, not str")
    return list(value)
