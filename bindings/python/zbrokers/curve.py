# Copyright 2026 The zbrokers Authors.
"""CURVE keys for clients and workers (docs/security.md).

A zb-broker CURVE endpoint lets in only clients and workers whose public
key is in its allowlist.  Give each client or worker the broker's public
key and its own key pair:

    import zbrokers

    keys = zbrokers.CurveKeys.from_files("broker.pub", "alice.secret")
    client = zbrokers.MdpClient(reactor, "tcp://broker:5565", curve=keys)
    worker = zbrokers.ConsensusWorker(reactor, "tcp://broker:5566", b"echo",
                                      handler, curve=keys)

Keys are 40-character Z85 strings, as `zb keygen` writes them.  The secret
key is never part of a repr() or an error message.
"""

from __future__ import annotations

import ctypes
from typing import Optional, Tuple, Union

from . import _native as n

__all__ = ["CurveKeys", "has_curve", "curve_keypair", "curve_public",
           "read_key_file"]

_Z85_LEN = 40


class _CKeys(ctypes.Structure):
    _fields_ = [("server_public_key", ctypes.c_char_p),
                ("public_key", ctypes.c_char_p),
                ("secret_key", ctypes.c_char_p)]


n.declare({
    "zb_has_curve": (ctypes.c_int, ()),
    "zb_curve_keypair": (ctypes.c_int, (ctypes.c_char_p, ctypes.c_char_p)),
    "zb_curve_public": (ctypes.c_int, (ctypes.c_char_p, ctypes.c_char_p)),
    "zb_consensus_client_new_curve": (
        ctypes.c_int, (ctypes.c_void_p, ctypes.c_char_p,
                       ctypes.POINTER(_CKeys), ctypes.POINTER(ctypes.c_void_p))),
    "zb_consensus_worker_new_curve": (
        ctypes.c_int, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_size_t, ctypes.c_int64, ctypes.c_int,
                       ctypes.POINTER(_CKeys), n.CONSENSUS_HANDLER_FN,
                       ctypes.c_void_p, n.FREE_FN,
                       ctypes.POINTER(ctypes.c_void_p))),
    "zb_mdp_client_new_curve": (
        ctypes.c_int, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                       ctypes.c_int, ctypes.POINTER(_CKeys),
                       ctypes.POINTER(ctypes.c_void_p))),
    "zb_mdp_worker_new_curve": (
        ctypes.c_int, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_size_t, ctypes.c_int64, ctypes.c_int,
                       ctypes.c_int64, ctypes.POINTER(_CKeys),
                       n.MDP_HANDLER_FN, ctypes.c_void_p, n.FREE_FN,
                       ctypes.POINTER(ctypes.c_void_p))),
})


def _key(value: Union[str, bytes], what: str) -> bytes:
    key = n.encode(value, what)
    if len(key) != _Z85_LEN:
        raise ValueError(f"{what} must be 40 Z85 characters, not "
                         f"{len(key)}")
    return key


def has_curve() -> bool:
    """True when the libzmq under libzbrokers.so has CURVE."""
    return bool(n.lib.zb_has_curve())


def curve_keypair() -> Tuple[str, str]:
    """A new (public_key, secret_key) pair, in Z85."""
    pub = ctypes.create_string_buffer(_Z85_LEN + 1)
    sec = ctypes.create_string_buffer(_Z85_LEN + 1)
    n.check(n.lib.zb_curve_keypair(pub, sec))
    return pub.value.decode("ascii"), sec.value.decode("ascii")


def curve_public(secret_key: Union[str, bytes]) -> str:
    """The public key of `secret_key` (both Z85)."""
    pub = ctypes.create_string_buffer(_Z85_LEN + 1)
    n.check(n.lib.zb_curve_public(_key(secret_key, "secret_key"), pub))
    return pub.value.decode("ascii")


def read_key_file(path: str) -> str:
    """The one key of a key file (`zb keygen`'s NAME.pub or NAME.secret):
    the first word of the one line that is not blank or a '#' comment."""
    keys = []
    with open(path, "r", encoding="ascii", errors="replace") as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            if len(words[0]) == _Z85_LEN:
                keys.append(words[0])
            elif not line.lstrip().startswith("#"):
                raise ValueError(f"{path}:{number}: expected a CURVE key of "
                                 "40 Z85 characters or a '#' comment")
    if len(keys) != 1:
        raise ValueError(f"{path}: expected exactly one key, found "
                         f"{len(keys)}")
    return keys[0]


class CurveKeys:
    """The broker's public key and our key pair (public_key is derived
    from secret_key when not given)."""

    __slots__ = ("server_public_key", "public_key", "_secret_key", "_c")

    def __init__(self, server_public_key: Union[str, bytes],
                 secret_key: Union[str, bytes],
                 public_key: Optional[Union[str, bytes]] = None) -> None:
        self.server_public_key = _key(server_public_key,
                                      "server_public_key").decode("ascii")
        self._secret_key = _key(secret_key, "secret_key")
        derived = curve_public(self._secret_key)
        if public_key is not None and \
                _key(public_key, "public_key").decode("ascii") != derived:
            raise ValueError("public_key is not the public key of secret_key")
        self.public_key = derived
        self._c = None

    @classmethod
    def from_files(cls, server_public_key_file: str,
                   secret_key_file: str) -> "CurveKeys":
        """Reads the broker's public key file and our secret key file."""
        return cls(read_key_file(server_public_key_file),
                   read_key_file(secret_key_file))

    def _struct(self) -> _CKeys:
        if self._c is None:
            self._c = _CKeys(self.server_public_key.encode("ascii"),
                             self.public_key.encode("ascii"),
                             self._secret_key)
        return self._c

    def __repr__(self) -> str:
        return (f"CurveKeys(server_public_key={self.server_public_key!r}, "
                f"public_key={self.public_key!r}, secret_key=<hidden>)")


def c_keys_struct(curve: Optional[CurveKeys]) -> Optional[_CKeys]:
    """The zb_curve_keys_t a client's options point at (None: plaintext)."""
    if curve is None:
        return None
    if not isinstance(curve, CurveKeys):
        raise TypeError(f"curve must be a CurveKeys, not "
                        f"{type(curve).__name__}")
    return curve._struct()


def c_keys(curve: Optional[CurveKeys]):
    """The pointer a *_new_curve function takes (None: plaintext)."""
    if curve is None:
        return None
    if not isinstance(curve, CurveKeys):
        raise TypeError(f"curve must be a CurveKeys, not "
                        f"{type(curve).__name__}")
    return ctypes.byref(curve._struct())
