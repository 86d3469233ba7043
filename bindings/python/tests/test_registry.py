# Copyright 2026 The zbrokers Authors.
"""A call that fails keeps nothing alive.

Every callback handed to C (a reply handler, a timer, a post, a socket's
readable handler, a worker's handler, a broker's log hook) is kept in the
package's callback registry until C releases it.  A call that raises --
on a closed object, on a closed reactor, with a bad argument -- must leave
the registry as it found it, or the callback and everything it refers to
stay alive for the life of the process."""

import unittest

import zbrokers
from zbrokers import _native

ENDPOINT = "tcp://127.0.0.1:1"  # never connected: nothing is sent


class FailedCallsLeaveNothingTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def assertLeavesNothing(self, call, error):
        base = len(_native._callbacks)
        with self.assertRaises(error):
            call()
        self.assertEqual(len(_native._callbacks), base)

    def test_closed_clients_and_sockets(self):
        client = zbrokers.ConsensusClient(self.reactor, ENDPOINT)
        mdp = zbrokers.MdpClient(self.reactor, ENDPOINT)
        sock = self.reactor.socket("DEALER")
        client.close()
        mdp.close()
        sock.close()
        self.assertLeavesNothing(
            lambda: client.request(b"echo", [b"x"], lambda r: None),
            zbrokers.StateError)
        self.assertLeavesNothing(lambda: client.ping(lambda ok: None),
                                 zbrokers.StateError)
        self.assertLeavesNothing(
            lambda: mdp.request(b"echo", [b"x"], lambda r: None),
            zbrokers.StateError)
        self.assertLeavesNothing(lambda: sock.on_readable(lambda f: None),
                                 zbrokers.StateError)

    def test_bad_arguments(self):
        client = zbrokers.ConsensusClient(self.reactor, ENDPOINT)
        self.assertLeavesNothing(
            lambda: client.ping(lambda ok: None, timeout="soon"), TypeError)
        self.assertLeavesNothing(
            lambda: zbrokers.ConsensusWorker(self.reactor, ENDPOINT, b"echo",
                                             lambda f: f, curve="keys"),
            TypeError)
        self.assertLeavesNothing(
            lambda: zbrokers.MdpWorker(self.reactor, ENDPOINT, b"echo",
                                       lambda f: f, curve="keys"),
            TypeError)
        self.assertLeavesNothing(
            lambda: zbrokers.ConsensusWorker(self.reactor, 5, b"echo",
                                             lambda f: f), TypeError)
        self.assertLeavesNothing(
            lambda: zbrokers.MdpWorker(self.reactor, ENDPOINT, b"echo",
                                       lambda f: f, heartbeat_interval=None),
            TypeError)
        self.assertLeavesNothing(
            lambda: zbrokers.ConsensusBroker(self.reactor, "nope://x",
                                             log=lambda level, line: None),
            zbrokers.ZbError)
        self.assertLeavesNothing(
            lambda: zbrokers.MdpBroker(self.reactor, "nope://x",
                                       log=lambda level, line: None),
            zbrokers.ZbError)

    def test_closed_reactor(self):
        reactor = zbrokers.Reactor()
        reactor.close()
        self.assertLeavesNothing(lambda: reactor.after(1.0, print),
                                 zbrokers.StateError)
        self.assertLeavesNothing(lambda: reactor.every(1.0, print),
                                 zbrokers.StateError)
        self.assertLeavesNothing(lambda: reactor.post(print),
                                 zbrokers.StateError)
        self.assertLeavesNothing(
            lambda: zbrokers.ConsensusWorker(reactor, ENDPOINT, b"echo",
                                             lambda f: f),
            zbrokers.StateError)
        self.assertLeavesNothing(
            lambda: zbrokers.MdpWorker(reactor, ENDPOINT, b"echo",
                                       lambda f: f),
            zbrokers.StateError)


if __name__ == "__main__":
    unittest.main()
