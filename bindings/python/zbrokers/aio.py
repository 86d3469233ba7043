# Copyright 2026 The zbrokers Authors.
"""Running a zbrokers reactor inside an asyncio event loop.

    import asyncio
    import zbrokers
    import zbrokers.aio

    async def main() -> None:
        reactor = zbrokers.Reactor()
        async with zbrokers.aio.attach(reactor):
            broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*")
            zbrokers.ConsensusWorker(reactor, broker.endpoint, b"echo",
                                     lambda frames: frames)
            client = zbrokers.ConsensusClient(reactor, broker.endpoint)
            result = await zbrokers.aio.request(client, b"echo", [b"hi"])
            print(result.ok, result.frames)
        reactor.close()

    asyncio.run(main())

The reactor runs on the event loop's thread, in the loop itself: no second
thread and no polling.  attach() registers the reactor's descriptor
(Reactor.fileno()) with loop.add_reader() and keeps one loop timer at the
reactor's next deadline (Reactor.next_timeout()); whenever either fires it
runs one reactor step (run_once(0)) and asks again.  Every reactor callback
-- timers, socket and client callbacks, worker handlers -- therefore runs
on the loop's thread, between coroutines, and may resolve futures or
create tasks directly.

ZeroMQ's ZMQ_FD is edge-triggered in effect: it says "something changed",
not "a message is waiting", and a send may consume the signal of a message
that is then never read.  Waiting on it alone can sleep with a message
queued.  The library handles it (docs/bindings.md): next_timeout() reads
every socket's ZMQ_EVENTS and answers 0 while anything is ready, and once
fileno() has been taken, every reactor call a coroutine makes (a send, a
request, a new socket or timer) makes the descriptor readable, so the
driver runs a step and looks again.  A reactor with a large backlog is
served one batch per step (call_soon between batches), so coroutines keep
running.

The reactor and everything on it belong to the loop's thread.  Other
threads use reactor.post() as usual (it wakes the loop).  reactor.stop()
makes zbrokers.aio.run(reactor) return.  Closing the reactor detaches it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional, Sequence, Union

from .consensus import ConsensusClient, Result
from .majordomo import MdpClient, MdpResult
from .reactor import Reactor

__all__ = ["AsyncioDriver", "attach", "run", "request", "ping"]


class AsyncioDriver:
    """Runs a Reactor inside an asyncio event loop (see the module
    docstring).  Made by attach(); close() (or leaving `async with`)
    detaches it, after which the reactor can be run() again."""

    def __init__(self, reactor: Reactor,
                 loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        if reactor._driver is not None:
            raise RuntimeError("this reactor is already attached to an "
                               "event loop")
        self._loop = loop if loop is not None else \
            asyncio.get_running_loop()
        self._reactor = reactor
        self._fd = reactor.fileno()
        self._handle: Optional[asyncio.Handle] = None
        self._closed = False
        self._stopped = asyncio.Event()
        reactor._driver = self
        self._loop.add_reader(self._fd, self._step)
        # The first step picks up whatever was set up before attaching.
        self._handle = self._loop.call_soon(self._step)

    @property
    def reactor(self) -> Reactor:
        return self._reactor

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Detaches the reactor from the loop.  Loop thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._loop.remove_reader(self._fd)
        if self._reactor._driver is self:
            self._reactor._driver = None
        self._stopped.set()

    async def wait_stopped(self) -> None:
        """Returns once reactor.stop() was called (or the driver closed)."""
        await self._stopped.wait()

    async def __aenter__(self) -> "AsyncioDriver":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # ---- stepping --------------------------------------------------------

    def _step(self) -> None:
        if self._closed or self._reactor.closed:
            return
        try:
            # Never blocks: everything ready runs, then control returns to
            # the loop.  KeyboardInterrupt/SystemExit from a callback
            # propagate (asyncio re-raises them); other exceptions went to
            # the reactor's error_handler already.
            self._reactor.run_once(0)
        finally:
            self._schedule()

    def _schedule(self) -> None:
        if self._closed or self._reactor.closed:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        wait = self._reactor.next_timeout()
        if wait is None:
            return  # only the descriptor can bring work
        if wait <= 0:
            self._handle = self._loop.call_soon(self._step)
        else:
            self._handle = self._loop.call_later(wait, self._step)

    def _stop_requested(self) -> None:
        # Reactor.stop(), from any thread.
        try:
            self._loop.call_soon_threadsafe(self._stopped.set)
        except RuntimeError:
            pass  # the loop is closed: nobody waits any more


def attach(reactor: Reactor,
           loop: Optional[asyncio.AbstractEventLoop] = None) -> AsyncioDriver:
    """Runs `reactor` inside `loop` (default: the running loop) from now on.
    Usable as `async with zbrokers.aio.attach(reactor): ...`."""
    return AsyncioDriver(reactor, loop)


async def run(reactor: Reactor) -> None:
    """Runs `reactor` inside the running loop until reactor.stop(), like
    reactor.run() but without blocking the loop:

        reactor = zbrokers.Reactor()
        zbrokers.ConsensusWorker(reactor, endpoint, b"echo", handler)
        await zbrokers.aio.run(reactor)
    """
    driver = reactor._driver
    owned = driver is None
    if owned:
        driver = attach(reactor)
    try:
        await driver.wait_stopped()
    finally:
        if owned:
            driver.close()
    if not reactor.closed:
        reactor._consume_stop()  # a later reactor.run() must not see it


def _driven(reactor: Reactor) -> AsyncioDriver:
    driver = reactor._driver
    if driver is None or driver.closed:
        raise RuntimeError("the client's reactor is not attached to an event "
                           "loop: use `async with zbrokers.aio.attach("
                           "reactor):` (or zbrokers.aio.run) first")
    return driver


async def request(client: Union[ConsensusClient, MdpClient],
                  service: Union[bytes, str],
                  frames: Sequence[bytes] = (),
                  **options: Any) -> Union[Result, MdpResult]:
    """Sends one request and returns its outcome: a Result for a
    ConsensusClient, an MdpResult for an MdpClient.  `options` are the
    client's request() options (timeout=, retries= for consensus;
    timeout= for Majordomo).  Cancelling the awaiting task does not cancel
    the request; its outcome is then dropped."""
    _driven(client.reactor)
    future: asyncio.Future = asyncio.get_running_loop().create_future()

    def done(outcome: Union[Result, MdpResult]) -> None:
        if not future.done():
            future.set_result(outcome)

    client.request(service, list(frames), done, **options)
    return await future


async def ping(client: ConsensusClient, timeout: float = 5.0) -> bool:
    """True when the consensus broker echoes a PING within `timeout`."""
    _driven(client.reactor)
    future: asyncio.Future = asyncio.get_running_loop().create_future()

    def done(ok: bool) -> None:
        if not future.done():
            future.set_result(ok)

    client.ping(done, timeout=timeout)
    return await future
