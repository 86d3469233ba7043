# Copyright 2026 The zbrokers Authors.
"""zbrokers: script the zbrokers reactor, clients and workers from Python.

A pure-Python package (standard library only) over the C ABI of
libzbrokers.so, loaded with ctypes.  The library is found, in this order:
the ZBROKERS_LIB environment variable (a path to the .so); a copy inside
this package (what `pip install` carries from a built tree); the library
directory of the prefix the package is installed under (`meson install`);
a build*/bindings/c/ directory above the package; the system library path.
`zbrokers.library_path` says which one was loaded.

    import zbrokers

    reactor = zbrokers.Reactor()
    reactor.after(1.0, reactor.stop)
    reactor.run()

    client = zbrokers.ConsensusClient(reactor, "tcp://127.0.0.1:5556")
    result = client.call(b"echo", [b"hi"])        # blocking, for scripts

asyncio programs run the reactor inside their event loop with
zbrokers.aio (`import zbrokers.aio`).  See docs/bindings.md for the guide.
"""

from .consensus import (ConsensusBroker, ConsensusClient, ConsensusWorker,
                        Reply, Result, WorkerError)
from ._native import (InvalidArgumentError, NotFoundError, StateError,
                      UnreachableError, WouldBlockError, WrongThreadError,
                      ZbError, ZmqError)
from ._native import lib as _lib
from .curve import (CurveKeys, curve_keypair, curve_public, has_curve,
                    read_key_file)
from ._native import library_path
from .majordomo import (WORKER_ERROR, MdpBroker, MdpClient, MdpReply,
                        MdpResult, MdpWorker)
from .reactor import (SOCKET_OPTIONS, Reactor, ReactorThread, Socket, Timer,
                      now)

__version__ = _lib.zb_version().decode("ascii")

__all__ = [
    "Reactor", "ReactorThread", "Timer", "Socket", "now", "SOCKET_OPTIONS",
    "ZbError", "InvalidArgumentError", "WrongThreadError", "NotFoundError",
    "StateError", "WouldBlockError", "UnreachableError", "ZmqError",
    "ConsensusClient", "ConsensusWorker", "ConsensusBroker", "Result",
    "Reply", "WorkerError",
    "MdpClient", "MdpWorker", "MdpBroker", "MdpResult", "MdpReply",
    "WORKER_ERROR", "library_path",
    "CurveKeys", "curve_keypair", "curve_public", "has_curve",
    "read_key_file",
]
