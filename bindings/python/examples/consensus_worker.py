#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""A consensus worker: serves b"echo" on a broker until Ctrl-C.

    python3 consensus_worker.py tcp://127.0.0.1:5556
"""
import sys

import zbrokers

reactor = zbrokers.Reactor()
endpoint = sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5556"


def echo(frames):          # return frames to succeed, raise to fail
    return [b"echo: " + f for f in frames]


worker = zbrokers.ConsensusWorker(reactor, endpoint, b"echo", echo)
try:
    reactor.run()
except KeyboardInterrupt:
    reactor.close()
