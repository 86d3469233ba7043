# Copyright 2026 The zbrokers Authors.
"""Reactor, Timer and Socket: the event loop of zbrokers, from Python.

    import zbrokers

    reactor = zbrokers.Reactor()
    reactor.every(0.5, lambda: print("tick"))
    reactor.after(2.0, reactor.stop)
    reactor.run()          # returns after stop()
    reactor.close()

Threading: a Reactor belongs to the thread that created it.  Only `post()`
and `stop()` may be called from other threads; everything else raises
WrongThreadError there.  Every callback runs on the reactor's thread, inside
`run()`/`run_once()`.  `ReactorThread` runs a reactor on a thread of its own.

Errors: failed calls raise ZbError subclasses carrying the C library's
message.  An exception raised by a callback is handed to the reactor's
`error_handler` (by default: printed with its traceback on stderr through
`sys.excepthook`) and the loop carries on.  KeyboardInterrupt and SystemExit
raised inside a callback stop the loop and are re-raised by `run()`.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import threading
import time
import weakref
from typing import (Any, Callable, Iterable, List, Optional, TypeVar,
                    Union)

from . import _native as n
from ._common import Child, Entry, default_error_handler, hand_over, \
    seconds_to_us
from ._native import StateError, ZbError

__all__ = ["Reactor", "Timer", "Socket", "ReactorThread", "now"]

_T = TypeVar("_T")

# run() returns to Python this often so that signals (Ctrl-C) are handled
# while the loop is idle.  Events never wait for it: the C loop wakes on them.
_RUN_SLICE_US = 200_000


def now() -> float:
    """Seconds on the monotonic clock the reactor's timers use."""
    return n.lib.zb_now_us() / 1e6


class Timer:
    """A timer handle returned by Reactor.after/every/at."""

    __slots__ = ("_reactor", "id", "_active", "__weakref__")

    def __init__(self, reactor: "Reactor", timer_id: int = 0) -> None:
        self._reactor = weakref.ref(reactor)
        self.id = timer_id
        self._active = True

    @property
    def active(self) -> bool:
        """False once a one-shot timer fired or any timer was cancelled."""
        return self._active

    def cancel(self) -> bool:
        """Same as reactor.cancel(self)."""
        reactor = self._reactor()
        return bool(reactor is not None and reactor.cancel(self))

    def _released(self):
        self._active = False

    def __repr__(self) -> str:
        state = "active" if self._active else "done"
        return f"<zbrokers.Timer {self.id:#x} {state}>"


class Reactor:
    """A zbrokers event loop: timers, sockets, cross-thread posts."""

    def __init__(self) -> None:
        ptr = ctypes.c_void_p()
        n.check(n.lib.zb_reactor_new(ctypes.byref(ptr)))
        self._ptr = ptr
        # Guards _ptr against post()/stop() from other threads racing with
        # close().  Re-entrant: close() runs callbacks (e.g. "client closed"
        # results) that may call post() or stop() on this thread.
        self._lock = threading.RLock()
        self._thread = threading.get_ident()
        self._interrupted: Optional[BaseException] = None
        self._children = weakref.WeakSet()  # sockets, clients, workers, ...
        # The asyncio driver (zbrokers.aio) running this reactor, if any.
        self._driver: Any = None
        self.error_handler: Callable[[BaseException, str], None] = \
            default_error_handler

    # ---- lifetime --------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def _handle(self) -> ctypes.c_void_p:
        ptr = self._ptr
        if ptr is None:
            raise StateError(n.ZB_ERR_STATE, "the reactor is closed")
        return ptr

    def close(self) -> None:
        """Destroys the reactor and everything on it (sockets, clients,
        workers, brokers; pending timers and posts are dropped).  Reactor
        thread only, not from inside a callback.  Idempotent."""
        with self._lock:
            if self._ptr is None:
                return
            if self._driver is not None:
                # Off the event loop before the descriptor it watches goes.
                self._driver.close()
            n.check(n.lib.zb_reactor_destroy(self._ptr))
            self._ptr = None
            # The C objects went with the reactor; their wrappers must not
            # touch them any more.
            for child in list(self._children):
                child._detach()

    def __enter__(self) -> "Reactor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self):
        # Best effort: on another thread or mid-run this fails, and the
        # reactor is left to the process exit.
        try:
            if self._ptr is not None and \
                    threading.get_ident() == self._thread:
                self.close()
        except Exception:
            pass

    def _adopt(self, child) -> None:
        self._children.add(child)

    # ---- errors ----------------------------------------------------------

    def _report(self, exc: BaseException, where: str) -> None:
        try:
            self.error_handler(exc, where)
        except Exception as e2:  # a broken handler must not break the loop
            default_error_handler(e2, "error_handler")

    def _interrupt(self, exc: BaseException) -> None:
        if self._interrupted is None:
            self._interrupted = exc
        if self._ptr is not None:
            n.lib.zb_reactor_stop(self._ptr)

    def _raise_interrupt(self) -> None:
        exc, self._interrupted = self._interrupted, None
        if exc is not None:
            raise exc

    # ---- running ---------------------------------------------------------

    def run(self) -> None:
        """Runs callbacks until stop() is called (from any thread or from a
        callback).  A stop() that came before run() makes it return at
        once."""
        ptr = self._handle()
        stopped = ctypes.c_int(0)
        while True:
            n.check(n.lib.zb_reactor_run_for(ptr, _RUN_SLICE_US,
                                             ctypes.byref(stopped)))
            self._raise_interrupt()
            if stopped.value:
                return

    def run_once(self, timeout: Optional[float] = None) -> int:
        """Waits at most `timeout` seconds (None: no limit) for something to
        happen, runs what is ready, returns how many callbacks ran."""
        max_wait = -1 if timeout is None else max(0, seconds_to_us(
            timeout, "timeout"))
        handled = ctypes.c_int(0)
        n.check(n.lib.zb_reactor_run_once(self._handle(), max_wait,
                                          ctypes.byref(handled)))
        self._raise_interrupt()
        return handled.value

    def run_until(self, predicate: Callable[[], bool],
                  timeout: Optional[float] = None) -> bool:
        """Runs until predicate() is true or `timeout` seconds passed;
        returns predicate()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not predicate():
            if deadline is None:
                self.run_once(_RUN_SLICE_US / 1e6)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.run_once(min(left, _RUN_SLICE_US / 1e6))
        return bool(predicate())

    def stop(self) -> None:
        """Makes run() return (and zbrokers.aio.run()).  Any thread, also
        from a callback."""
        with self._lock:
            n.check(n.lib.zb_reactor_stop(self._handle()))
            driver = self._driver
        if driver is not None:
            driver._stop_requested()

    def _consume_stop(self) -> None:
        # Takes back a stop() that zbrokers.aio.run() has acted on.
        stopped = ctypes.c_int(0)
        n.check(n.lib.zb_reactor_run_for(self._handle(), 0,
                                         ctypes.byref(stopped)))

    # ---- driving it from another event loop ------------------------------

    def fileno(self) -> int:
        """A descriptor that is readable while the reactor has something to
        do, for another event loop (selectors, asyncio's add_reader, ...):
        wait on it for at most next_timeout() seconds, then call
        run_once(0), and ask again.  zbrokers.aio does exactly this for
        asyncio.  The reactor owns the descriptor (never close it); once
        this has been called, every call made on the reactor's thread
        outside its callbacks also makes it readable, so the host runs a
        step after anything that might have changed what the reactor waits
        for (see docs/bindings.md on ZeroMQ's edge-triggered ZMQ_FD).
        Reactor thread, not from inside a callback."""
        fd = ctypes.c_int(-1)
        n.check(n.lib.zb_reactor_fd(self._handle(), ctypes.byref(fd)))
        return fd.value

    def next_timeout(self) -> Optional[float]:
        """Seconds the host may wait on fileno() before the next
        run_once(0): 0.0 when there is work now, the time to the earliest
        timer, or None when only the descriptor can bring work.  Call it
        after every step.  Reactor thread, not from inside a callback."""
        us = ctypes.c_int64(0)
        n.check(n.lib.zb_reactor_next_timeout_us(self._handle(),
                                                 ctypes.byref(us)))
        return None if us.value < 0 else us.value / 1e6

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Runs fn(*args) on the reactor thread at the next iteration,
        waking the loop at once.  Any thread."""
        self._post_entry((lambda: fn(*args)) if args else fn)

    def _post_entry(self, fn: Callable[[], Any],
                    on_release: Optional[Callable[[], None]] = None) -> None:
        # post(); on_release runs when the C side frees the task (after it
        # ran, or unrun because the reactor closed first).
        entry = Entry(self, fn, "post", on_release=on_release)
        with self._lock:
            hand_over(entry, lambda user: n.lib.zb_reactor_post(
                self._handle(), n.call_trampoline, user, n.free_trampoline))

    # ---- timers ----------------------------------------------------------

    def _timer(self, c_fn, amount: int, fn: Callable, args, kind: str):
        timer = Timer(self)
        entry = Entry(self, (lambda: fn(*args)) if args else fn, kind,
                      on_release=timer._released)
        tid = ctypes.c_uint64(0)
        hand_over(entry, lambda user: c_fn(
            self._handle(), amount, n.call_trampoline, user,
            n.free_trampoline, ctypes.byref(tid)))
        timer.id = tid.value
        return timer

    def after(self, seconds: float, fn: Callable[..., Any],
              *args: Any) -> Timer:
        """Calls fn(*args) once, `seconds` from now.  Returns a Timer."""
        us = seconds_to_us(seconds, "seconds")
        return self._timer(n.lib.zb_reactor_after, us, fn, args, "timer")

    def every(self, seconds: float, fn: Callable[..., Any],
              *args: Any) -> Timer:
        """Calls fn(*args) every `seconds` (> 0) until cancelled."""
        us = seconds_to_us(seconds, "seconds")
        return self._timer(n.lib.zb_reactor_every, us, fn, args, "timer")

    def at(self, when: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Calls fn(*args) once at `when`, in time.monotonic() seconds."""
        deadline = n.lib.zb_now_us() + seconds_to_us(
            when - time.monotonic(), "when")
        return self._timer(n.lib.zb_reactor_at, deadline, fn, args, "timer")

    def cancel(self, timer: Union[Timer, int]) -> bool:
        """Cancels a timer (a Timer or its id).  Returns False when it
        already fired (one-shot) or was already cancelled."""
        tid = timer.id if isinstance(timer, Timer) else int(timer)
        rc = n.lib.zb_reactor_cancel(self._handle(), tid)
        if rc == n.ZB_ERR_NOT_FOUND:
            return False
        n.check(rc)
        return True

    # ---- sockets ---------------------------------------------------------

    def socket(self, socket_type: Union[str, int]) -> "Socket":
        """A new Socket of the given type ("DEALER", "ROUTER", ... or a
        ZeroMQ type number) on this reactor."""
        return Socket(self, socket_type)

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else "open"
        return f"<zbrokers.Reactor {state}>"


# ZeroMQ option names accepted by Socket.set()/get().  Values are ZeroMQ's
# option numbers; any other number may be passed directly.
SOCKET_OPTIONS = {
    "affinity": 4,
    "routing_id": 5,
    "identity": 5,
    "subscribe": 6,
    "unsubscribe": 7,
    "rate": 8,
    "recovery_ivl": 9,
    "sndbuf": 11,
    "rcvbuf": 12,
    "rcvmore": 13,
    "type": 16,
    "linger": 17,
    "reconnect_ivl": 18,
    "backlog": 19,
    "reconnect_ivl_max": 21,
    "maxmsgsize": 22,
    "sndhwm": 23,
    "rcvhwm": 24,
    "multicast_hops": 25,
    "rcvtimeo": 27,
    "sndtimeo": 28,
    "last_endpoint": 32,
    "router_mandatory": 33,
    "tcp_keepalive": 34,
    "immediate": 39,
    "ipv6": 42,
    "probe_router": 51,
    "req_correlate": 52,
    "req_relaxed": 53,
    "conflate": 54,
    "router_handover": 56,
    "heartbeat_ivl": 75,
    "heartbeat_ttl": 76,
    "heartbeat_timeout": 77,
}

# Options whose value is a byte string.
_BYTES_OPTIONS = {5, 6, 7, 32}


def _option(option: Union[str, int]) -> int:
    if isinstance(option, int):
        return option
    try:
        return SOCKET_OPTIONS[option.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown socket option {option!r}") from None


class Socket(Child):
    """A ZeroMQ socket owned by a reactor.

        s = reactor.socket("DEALER")
        s.connect("tcp://127.0.0.1:5555")
        s.on_readable(lambda frames: print(frames))
        s.send([b"", b"hello"])

    Reactor thread only.  Sends never block: a full queue raises
    WouldBlockError.  Its linger is 0 by default (closing never blocks);
    `s.set("linger", ms)` to keep unsent messages for a while.
    """

    _kind = "socket"
    _destroy = "zb_socket_close"

    def __init__(self, reactor: Reactor,
                 socket_type: Union[str, int]) -> None:
        ptr = ctypes.c_void_p()
        if isinstance(socket_type, str):
            rc = n.lib.zb_socket_new_named(reactor._handle(),
                                           socket_type.encode("ascii"),
                                           ctypes.byref(ptr))
        else:
            rc = n.lib.zb_socket_new(reactor._handle(), int(socket_type),
                                     ctypes.byref(ptr))
        n.check(rc)
        self._init_child(reactor, ptr)

    def bind(self, endpoint: str) -> str:
        """Binds and returns the actual endpoint (the port chosen for
        "tcp://127.0.0.1:*")."""
        n.check(n.lib.zb_socket_bind(self._handle(),
                                     n.encode(endpoint, "endpoint")))
        return self.last_endpoint

    def connect(self, endpoint: str) -> None:
        n.check(n.lib.zb_socket_connect(self._handle(),
                                        n.encode(endpoint, "endpoint")))

    def unbind(self, endpoint: str) -> None:
        n.check(n.lib.zb_socket_unbind(self._handle(),
                                       n.encode(endpoint, "endpoint")))

    def disconnect(self, endpoint: str) -> None:
        n.check(n.lib.zb_socket_disconnect(self._handle(),
                                           n.encode(endpoint, "endpoint")))

    @property
    def last_endpoint(self) -> str:
        buf = ctypes.create_string_buffer(1024)
        n.check(n.lib.zb_socket_last_endpoint(self._handle(), buf,
                                              len(buf)))
        return buf.value.decode("utf-8")

    def set(self, option: Union[str, int], value: Union[int, bytes]) -> None:
        """Sets a socket option by name ("linger", "routing_id", ...) or
        ZeroMQ number; ints for integer options, bytes for byte options."""
        opt = _option(option)
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int):
            n.check(n.lib.zb_socket_set_int(self._handle(), opt, value))
        else:
            raw = n.to_bytes(value, "option value")
            n.check(n.lib.zb_socket_set_bytes(self._handle(), opt, raw,
                                              len(raw)))

    def get(self, option: Union[str, int]) -> Union[int, bytes]:
        opt = _option(option)
        if opt in _BYTES_OPTIONS:
            buf = ctypes.create_string_buffer(1024)
            size = ctypes.c_size_t(0)
            n.check(n.lib.zb_socket_get_bytes(self._handle(), opt, buf,
                                              len(buf), ctypes.byref(size)))
            return buf.raw[:size.value]
        value = ctypes.c_int64(0)
        n.check(n.lib.zb_socket_get_int(self._handle(), opt,
                                        ctypes.byref(value)))
        return value.value

    def send(self, frames: Iterable[bytes]) -> None:
        """Sends one multipart message (a list of bytes frames) without
        blocking.  Raises WouldBlockError at the high-water mark and
        UnreachableError for an unknown ROUTER peer (router_mandatory)."""
        count, data, sizes, _keep = n.frames_in(frames)
        if count == 0:
            raise ValueError("send needs at least one frame")
        n.check(n.lib.zb_socket_send(self._handle(), count, data, sizes))

    def on_readable(self,
                    callback: Optional[Callable[[List[bytes]], None]]) -> None:
        """Calls callback(frames) on the reactor thread for every message
        that arrives; None stops watching the socket."""
        if callback is None:
            n.check(n.lib.zb_socket_on_readable(self._handle(),
                                                n.FRAMES_FN(), None,
                                                n.FREE_FN()))
            return
        hand_over(Entry(self._reactor, callback, "socket"),
                  lambda user: n.lib.zb_socket_on_readable(
                      self._handle(), n.frames_trampoline, user,
                      n.free_trampoline))


class ReactorThread:
    """Runs a Reactor on a thread of its own.

        with zbrokers.ReactorThread() as rt:
            client = rt.invoke(lambda r: zbrokers.ConsensusClient(r, ep))
            rt.reactor.post(...)

    The reactor is created on the new thread, so that thread owns it.  From
    other threads use `reactor.post()`, `reactor.stop()` or `invoke()`.
    """

    def __init__(self, name: str = "zbrokers-reactor") -> None:
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._error: Optional[BaseException] = None

        def main():
            try:
                reactor = Reactor()
            except BaseException as e:
                ready.set_exception(e)
                return
            ready.set_result(reactor)
            try:
                reactor.run()
            except BaseException as e:  # kept for join()
                self._error = e
            finally:
                try:
                    reactor.close()
                except ZbError as e:
                    self._error = self._error or e

        self._thread = threading.Thread(target=main, name=name, daemon=True)
        self._thread.start()
        self.reactor: Reactor = ready.result()

    def invoke(self, fn: Callable[[Reactor], _T],
               timeout: Optional[float] = None) -> _T:
        """Runs fn(reactor) on the reactor thread, waits, and returns its
        result (or raises its exception).  After stop() it runs fn if the
        loop still takes it, or raises StateError; it never waits for a
        task that will not run."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("invoke() on the reactor thread would wait for "
                               "itself")
        done: concurrent.futures.Future = concurrent.futures.Future()

        def task():
            try:
                done.set_result(fn(self.reactor))
            except BaseException as e:
                done.set_exception(e)

        def dropped():
            # The C side frees every posted task exactly once: after it
            # ran, or unrun when the stopped reactor is closed.  In the
            # second case nothing else would ever complete `done`.
            if not done.done():
                try:
                    done.set_exception(StateError(
                        n.ZB_ERR_STATE, "invoke(): the reactor thread "
                        "stopped before it ran the task"))
                except concurrent.futures.InvalidStateError:
                    pass

        self.reactor._post_entry(task, dropped)
        return done.result(timeout)

    def stop(self) -> None:
        if not self.reactor.closed:
            try:
                self.reactor.stop()
            except StateError:
                pass

    def join(self, timeout: Optional[float] = None) -> None:
        """Waits for the thread; re-raises what run() raised."""
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error

    def __enter__(self) -> "ReactorThread":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join()
