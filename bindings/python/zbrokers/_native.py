# Copyright 2026 The zbrokers Authors.
"""Loads libzbrokers.so and declares the C ABI (zb.h) for ctypes.

Everything that touches ctypes directly lives here: finding the library,
the function prototypes, turning return codes into exceptions, frame
conversion, and the callback registry.

The callback registry is what keeps ctypes callbacks safe.  C never receives
a per-call ctypes function object (which Python could garbage-collect while
C still holds its address).  Instead a handful of module-level trampolines
are passed everywhere, and C's `void* user` is an integer key into
`_callbacks`.  C calls `_free_trampoline(key)` exactly once when it will not
use that key again (zb.h's free_user contract), and only then is the Python
callable dropped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import itertools
import os
import sysconfig
from ctypes import (CFUNCTYPE, POINTER, c_char_p, c_int, c_int64, c_size_t,
                    c_uint64, c_void_p)

__all__ = [
    "ZbError", "WrongThreadError", "NotFoundError", "StateError",
    "WouldBlockError", "UnreachableError", "ZmqError",
]

# ---- Errors -----------------------------------------------------------------

ZB_OK = 0
ZB_ERR_INVALID = -1
ZB_ERR_WRONG_THREAD = -2
ZB_ERR_NOT_FOUND = -3
ZB_ERR_STATE = -4
ZB_ERR_AGAIN = -5
ZB_ERR_UNREACHABLE = -6
ZB_ERR_ZMQ = -7
ZB_ERR_RANGE = -8
ZB_ERR_NO_MEMORY = -9
ZB_ERR_INTERNAL = -10
ZB_ERR_TIMEOUT = -11
ZB_ERR_CANCELLED = -12

# zb_consensus_client_request_flags() flags.
ZB_REQUEST_RETRY_NO_WORKERS = 1


class ZbError(Exception):
    """A zb_ call failed.  `code` is the ZB_ERR_* value, `str(e)` is the C
    library's message (zb_last_error())."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class WrongThreadError(ZbError):
    """A reactor-thread-only method was called from another thread."""


class NotFoundError(ZbError):
    """The thing named does not exist (e.g. an unknown timer)."""


class StateError(ZbError):
    """The object is closed, or the call is not allowed right now."""


class WouldBlockError(ZbError):
    """A send hit the socket's high-water mark; nothing was sent."""


class UnreachableError(ZbError):
    """A ROUTER with router_mandatory has no such peer; nothing was sent."""


class ZmqError(ZbError):
    """ZeroMQ refused (bad endpoint, address in use, bad option, ...)."""


_ERROR_CLASSES = {
    ZB_ERR_INVALID: ValueError,  # mixed in below
    ZB_ERR_WRONG_THREAD: WrongThreadError,
    ZB_ERR_NOT_FOUND: NotFoundError,
    ZB_ERR_STATE: StateError,
    ZB_ERR_AGAIN: WouldBlockError,
    ZB_ERR_UNREACHABLE: UnreachableError,
    ZB_ERR_ZMQ: ZmqError,
}


class InvalidArgumentError(ZbError, ValueError):
    """A bad argument (unknown socket type, negative delay, ...)."""


_ERROR_CLASSES[ZB_ERR_INVALID] = InvalidArgumentError
__all__.append("InvalidArgumentError")


def error_for(code: int) -> ZbError:
    """The exception for a failed call, carrying zb_last_error()."""
    message = lib.zb_last_error().decode("utf-8", "replace")
    cls = _ERROR_CLASSES.get(code, ZbError)
    if code == ZB_ERR_NO_MEMORY:
        return MemoryError(message)  # type: ignore[return-value]
    return cls(code, message)


def check(code: int) -> None:
    if code != ZB_OK:
        raise error_for(code)


# ---- Finding the library ----------------------------------------------------

# The runtime name first: a runtime-only install has no libzbrokers.so link.
_LIB_NAMES = ("libzbrokers.so.0", "libzbrokers.so")


def _asan_loaded() -> bool:
    # An ASan-instrumented library aborts the process when the ASan runtime
    # is not preloaded, so sanitizer build directories are only considered
    # when it is.
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def _build_candidates(start: str):
    """build*/bindings/c/libzbrokers.so in `start` and every parent, the
    plain build/ first, sanitizer builds last (or not at all)."""
    here = os.path.abspath(start)
    while True:
        found = glob.glob(os.path.join(here, "build*", "bindings", "c",
                                       "libzbrokers.so"))

        def rank(path):
            name = os.path.basename(
                os.path.dirname(os.path.dirname(os.path.dirname(path))))
            return (name != "build", "san" in name, name)

        for path in sorted(found, key=rank):
            name = path.split(os.sep)[-4]
            if "san" in name and not _asan_loaded():
                continue
            yield path
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def _prefix_candidates(package_dir: str):
    """libzbrokers.so in the library directories of the prefix the package
    is installed under: PREFIX/lib/python3.X/site-packages/zbrokers (or
    Debian's PREFIX/lib/python3/dist-packages/zbrokers) has its library in
    PREFIX/lib/<multiarch>/, PREFIX/lib64/ or PREFIX/lib/ -- what `meson
    install` (with or without --destdir) lays out."""
    parts = package_dir.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("lib", "lib64") and i + 1 < len(parts) and \
                parts[i + 1].startswith("python"):
            prefix = os.sep.join(parts[:i]) or os.sep
            break
    else:
        return
    multiarch = sysconfig.get_config_var("MULTIARCH")
    dirs = []
    if multiarch:
        dirs.append(os.path.join(prefix, "lib", multiarch))
    dirs += sorted(glob.glob(os.path.join(prefix, "lib", "*-linux-*")))
    dirs += [os.path.join(prefix, "lib64"), os.path.join(prefix, "lib")]
    seen = set()
    for d in dirs:
        for name in _LIB_NAMES:
            path = os.path.join(d, name)
            if path not in seen and os.path.exists(path):
                seen.add(path)
                yield path


def _candidates():
    env = os.environ.get("ZBROKERS_LIB")
    if env:
        # An explicit choice is final: failing to load it is an error rather
        # than a silent fallback to some other copy.
        yield env
        return
    package_dir = os.path.dirname(os.path.abspath(__file__))
    # A copy the package carries (pip install from a built source tree).
    for name in _LIB_NAMES:
        path = os.path.join(package_dir, name)
        if os.path.exists(path):
            yield path
    yield from _prefix_candidates(package_dir)
    yield from _build_candidates(package_dir)
    system = ctypes.util.find_library("zbrokers")
    if system:
        yield system
    yield "libzbrokers.so.0"  # the dynamic loader's own search path


def _load() -> ctypes.CDLL:
    errors = []
    for candidate in _candidates():
        try:
            loaded = ctypes.CDLL(candidate)
        except OSError as e:
            errors.append(f"  {candidate}: {e}")
            continue
        global library_path
        library_path = candidate
        return loaded
    raise ImportError(
        "zbrokers: cannot load libzbrokers.so; set ZBROKERS_LIB to its path, "
        "install it (meson install), or build it (ninja -C build).  Tried:\n"
        + "\n".join(errors))


# Where the library was loaded from (a path, or a name the dynamic loader
# resolved).
library_path = ""
lib = _load()

# ---- Prototypes -------------------------------------------------------------

FREE_FN = CFUNCTYPE(None, c_void_p)
CALLBACK_FN = CFUNCTYPE(None, c_void_p)
FRAMES_FN = CFUNCTYPE(None, c_void_p, c_size_t, POINTER(c_void_p),
                      POINTER(c_size_t))

STATUS_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
CONSENSUS_REPLY_FN = CFUNCTYPE(None, c_void_p, c_int, c_int, c_char_p, c_int,
                               c_size_t, POINTER(c_void_p), POINTER(c_size_t))
CONSENSUS_HANDLER_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t,
                                 POINTER(c_void_p), POINTER(c_size_t))
MDP_REPLY_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p, c_size_t,
                         POINTER(c_void_p), POINTER(c_size_t))
MDP_HANDLER_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t,
                           POINTER(c_void_p), POINTER(c_size_t))

_p = c_void_p
_pp = POINTER(c_void_p)


class ClientOptions(ctypes.Structure):
    """zb_client_options_t (zb.h): `curve` is a zb_curve_keys_t* (the
    caller keeps the struct it points at alive)."""
    _fields_ = [("size", c_size_t), ("endpoint_policy", c_int),
                ("curve", c_void_p)]


_frames = (c_size_t, POINTER(c_char_p), POINTER(c_size_t))

_PROTOTYPES = {
    "zb_last_error": (c_char_p, ()),
    "zb_strerror": (c_char_p, (c_int,)),
    "zb_version": (c_char_p, ()),
    "zb_now_us": (c_int64, ()),
    "zb_reactor_new": (c_int, (_pp,)),
    "zb_reactor_destroy": (c_int, (_p,)),
    "zb_reactor_run": (c_int, (_p,)),
    "zb_reactor_run_once": (c_int, (_p, c_int64, POINTER(c_int))),
    "zb_reactor_run_for": (c_int, (_p, c_int64, POINTER(c_int))),
    "zb_reactor_stop": (c_int, (_p,)),
    "zb_reactor_post": (c_int, (_p, CALLBACK_FN, _p, FREE_FN)),
    "zb_reactor_fd": (c_int, (_p, POINTER(c_int))),
    "zb_reactor_next_timeout_us": (c_int, (_p, POINTER(c_int64))),
    "zb_reactor_after": (c_int, (_p, c_int64, CALLBACK_FN, _p, FREE_FN,
                                 POINTER(c_uint64))),
    "zb_reactor_every": (c_int, (_p, c_int64, CALLBACK_FN, _p, FREE_FN,
                                 POINTER(c_uint64))),
    "zb_reactor_at": (c_int, (_p, c_int64, CALLBACK_FN, _p, FREE_FN,
                              POINTER(c_uint64))),
    "zb_reactor_cancel": (c_int, (_p, c_uint64)),
    "zb_socket_new": (c_int, (_p, c_int, _pp)),
    "zb_socket_new_named": (c_int, (_p, c_char_p, _pp)),
    "zb_socket_close": (c_int, (_p,)),
    "zb_socket_set_int": (c_int, (_p, c_int, c_int64)),
    "zb_socket_set_bytes": (c_int, (_p, c_int, c_char_p, c_size_t)),
    "zb_socket_get_int": (c_int, (_p, c_int, POINTER(c_int64))),
    "zb_socket_get_bytes": (c_int, (_p, c_int, c_char_p, c_size_t,
                                    POINTER(c_size_t))),
    "zb_socket_bind": (c_int, (_p, c_char_p)),
    "zb_socket_connect": (c_int, (_p, c_char_p)),
    "zb_socket_unbind": (c_int, (_p, c_char_p)),
    "zb_socket_disconnect": (c_int, (_p, c_char_p)),
    "zb_socket_last_endpoint": (c_int, (_p, c_char_p, c_size_t)),
    "zb_socket_send": (c_int, (_p,) + _frames),
    "zb_socket_on_readable": (c_int, (_p, FRAMES_FN, _p, FREE_FN)),
    # Client options (endpoint lists)
    "zb_client_options_init": (c_int, (POINTER(ClientOptions),)),
    "zb_endpoint_policy_parse": (c_int, (c_char_p, POINTER(c_int))),
    # Consensus
    "zb_consensus_client_new": (c_int, (_p, c_char_p, _pp)),
    "zb_consensus_client_new_ex": (c_int, (_p, c_char_p,
                                           POINTER(ClientOptions), _pp)),
    "zb_consensus_client_failovers": (c_int, (_p, POINTER(c_uint64))),
    "zb_consensus_client_destroy": (c_int, (_p,)),
    "zb_consensus_client_request": (c_int, (_p, c_char_p, c_size_t) + _frames
                                    + (c_int64, c_int, CONSENSUS_REPLY_FN,
                                       _p, FREE_FN)),
    "zb_consensus_client_request_flags": (
        c_int, (_p, c_char_p, c_size_t) + _frames
        + (c_int64, c_int, c_int, CONSENSUS_REPLY_FN, _p, FREE_FN)),
    "zb_consensus_client_ping": (c_int, (_p, c_int64, STATUS_FN, _p,
                                         FREE_FN)),
    "zb_consensus_client_open_requests": (c_int, (_p, POINTER(c_size_t))),
    "zb_consensus_worker_new": (c_int, (_p, c_char_p, c_char_p, c_size_t,
                                        c_int64, c_int, CONSENSUS_HANDLER_FN,
                                        _p, FREE_FN, _pp)),
    "zb_consensus_worker_destroy": (c_int, (_p,)),
    "zb_responder_succeed": (c_int, (_p,) + _frames),
    "zb_responder_fail": (c_int, (_p,) + _frames),
    "zb_responder_discard": (c_int, (_p,)),
    "zb_consensus_broker_new": (c_int, (_p, c_int64, _pp)),
    "zb_consensus_broker_destroy": (c_int, (_p,)),
    "zb_consensus_broker_bind": (c_int, (_p, c_char_p, c_char_p, c_size_t)),
    "zb_consensus_broker_set_log": (c_int, (_p, LOG_FN, _p, FREE_FN)),
    "zb_consensus_broker_worker_count": (c_int, (_p, c_char_p, c_size_t,
                                                 POINTER(c_size_t))),
    # Majordomo
    "zb_mdp_client_new": (c_int, (_p, c_char_p, c_int64, c_int, _pp)),
    "zb_mdp_client_new_ex": (c_int, (_p, c_char_p, c_int64, c_int,
                                     POINTER(ClientOptions), _pp)),
    "zb_mdp_client_failovers": (c_int, (_p, POINTER(c_uint64))),
    "zb_mdp_client_destroy": (c_int, (_p,)),
    "zb_mdp_client_request": (c_int, (_p, c_char_p, c_size_t) + _frames
                              + (c_int64, MDP_REPLY_FN, _p, FREE_FN)),
    "zb_mdp_client_outstanding": (c_int, (_p, POINTER(c_size_t))),
    "zb_mdp_worker_new": (c_int, (_p, c_char_p, c_char_p, c_size_t, c_int64,
                                  c_int, c_int64, MDP_HANDLER_FN, _p, FREE_FN,
                                  _pp)),
    "zb_mdp_worker_destroy": (c_int, (_p,)),
    "zb_mdp_reply": (c_int, (_p,) + _frames),
    "zb_mdp_replier_discard": (c_int, (_p,)),
    "zb_mdp_broker_new": (c_int, (_p, c_int64, c_int, _pp)),
    "zb_mdp_broker_destroy": (c_int, (_p,)),
    "zb_mdp_broker_bind": (c_int, (_p, c_char_p, c_char_p, c_size_t)),
    "zb_mdp_broker_set_log": (c_int, (_p, LOG_FN, _p, FREE_FN)),
    "zb_mdp_broker_worker_count": (c_int, (_p, c_char_p, c_size_t,
                                           POINTER(c_size_t))),
}


def declare(prototypes: dict) -> None:
    """Sets restype/argtypes; functions missing from an older library are
    skipped (the Python class using them reports that when called)."""
    for name, (restype, argtypes) in prototypes.items():
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        fn.restype = restype
        fn.argtypes = list(argtypes)


declare(_PROTOTYPES)


def has(name: str) -> bool:
    return hasattr(lib, name)


# ---- Frames -----------------------------------------------------------------


def to_bytes(value, what: str = "frame") -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes-like, not {type(value).__name__}")


def frames_in(frames):
    """(count, data array, sizes array, keep-alive) for a list of frames."""
    if isinstance(frames, (bytes, bytearray, memoryview)):
        raise TypeError("frames must be a list of bytes, not a single bytes "
                        "object (wrap it: [frame])")
    blobs = [to_bytes(f) for f in frames]
    n = len(blobs)
    data = (c_char_p * max(n, 1))(*blobs)
    sizes = (c_size_t * max(n, 1))(*[len(b) for b in blobs])
    return n, data, sizes, blobs


def frames_out(count, data, sizes) -> list:
    """Copies frames handed to a callback into a list of bytes."""
    out = []
    for i in range(count):
        size = sizes[i]
        out.append(ctypes.string_at(data[i], size) if size else b"")
    return out


def encode(text, what: str) -> bytes:
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    raise TypeError(f"{what} must be str or bytes, not {type(text).__name__}")


# ---- Callback registry ------------------------------------------------------

_callbacks: dict = {}
# next() on itertools.count is atomic under the GIL, so keys are unique
# across threads without a lock (post() is called from any thread).
_keys = itertools.count(1)


def register(fn) -> int:
    """Keeps `fn` alive under a new key until C releases the key."""
    key = next(_keys)
    _callbacks[key] = fn
    return key


def unregister(key: int) -> None:
    """Drops a key whose C call failed (C did not take it)."""
    _callbacks.pop(key, None)


def _lookup(user):
    return _callbacks.get(user or 0)


@FREE_FN
def free_trampoline(user):
    entry = _callbacks.pop(user or 0, None)
    release = getattr(entry, "released", None)
    if release is not None:
        release()


@CALLBACK_FN
def call_trampoline(user):
    entry = _lookup(user)
    if entry is not None:
        entry()


@FRAMES_FN
def frames_trampoline(user, count, data, sizes):
    entry = _lookup(user)
    if entry is not None:
        entry(frames_out(count, data, sizes))


def _text(raw) -> str:
    # A C string handed to a callback (NULL is "").
    return (raw or b"").decode("utf-8", "replace")


def _serve(user, token, count, data, sizes, discard) -> None:
    # A worker's request: to its handler, or when the worker's handler is
    # gone, `discard`ed so that the request is not left open.
    entry = _lookup(user)
    if entry is None:
        discard(token)
        return
    entry(token, frames_out(count, data, sizes))


def as_user(key: int) -> int:
    # ctypes converts a Python int for a c_void_p parameter itself.
    return key


@STATUS_FN
def status_trampoline(user, code, message):
    entry = _lookup(user)
    if entry is not None:
        entry(code, _text(message))


@LOG_FN
def log_trampoline(user, level, line):
    entry = _lookup(user)
    if entry is not None:
        entry(level, _text(line))


@CONSENSUS_REPLY_FN
def consensus_reply_trampoline(user, result, failed_by, reason, attempts,
                               count, data, sizes):
    entry = _lookup(user)
    if entry is not None:
        entry(result, failed_by, _text(reason), attempts,
              frames_out(count, data, sizes))


@CONSENSUS_HANDLER_FN
def consensus_handler_trampoline(user, responder, count, data, sizes):
    # Nobody to answer frees the token: the broker hears "unanswered".
    _serve(user, responder, count, data, sizes, lib.zb_responder_discard)


@MDP_REPLY_FN
def mdp_reply_trampoline(user, code, message, count, data, sizes):
    entry = _lookup(user)
    if entry is not None:
        entry(code, _text(message), frames_out(count, data, sizes))


@MDP_HANDLER_FN
def mdp_handler_trampoline(user, replier, count, data, sizes):
    # Nobody to answer gives the request back to the broker.
    _serve(user, replier, count, data, sizes, lib.zb_mdp_replier_discard)
