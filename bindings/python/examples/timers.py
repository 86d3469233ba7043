#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Timers, cancel, post from another thread, stop: the reactor in a nutshell.

    python3 timers.py            # about one second
"""

import threading
import time

import zbrokers

reactor = zbrokers.Reactor()
start = time.monotonic()


def say(what):
    print(f"{time.monotonic() - start:6.3f}s  {what}", flush=True)


ticker = reactor.every(0.2, say, "tick (every 0.2 s)")
reactor.after(0.5, say, "once, after 0.5 s")
never = reactor.after(0.7, say, "this never prints")
reactor.cancel(never)                       # or never.cancel()
reactor.after(0.9, lambda: say(f"cancelled the ticker: {ticker.cancel()}"))


def worker_thread():
    time.sleep(0.3)
    # post() is the one way in from other threads; the callback runs on the
    # reactor's thread.
    reactor.post(say, "posted from another thread")
    time.sleep(0.7)
    reactor.post(say, "stopping")
    reactor.stop()                          # stop() works from any thread


threading.Thread(target=worker_thread).start()
reactor.run()                               # blocks until stop()
reactor.close()
say("done")
