# Copyright 2026 The zbrokers Authors.
"""Sockets through the Python package: ping-pong, options, error paths."""

import os
import unittest

import zbrokers

WAIT = 10.0


class SocketTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def test_pair_ping_pong(self):
        a = self.reactor.socket("PAIR")
        b = self.reactor.socket("pair")
        endpoint = f"inproc://py-pair-{os.getpid()}-{id(self)}"
        a.bind(endpoint)
        b.connect(endpoint)
        got = {"a": 0, "b": 0}

        def bounce(name, sock):
            def on_frames(frames):
                got[name] += 1
                self.assertEqual(frames[0], b"ping")
                count = int(frames[1]) + 1
                if count < 200:
                    sock.send([b"ping", str(count).encode()])
            return on_frames

        a.on_readable(bounce("a", a))
        b.on_readable(bounce("b", b))
        a.send([b"ping", b"0"])
        self.assertTrue(self.reactor.run_until(
            lambda: got["a"] + got["b"] == 200, WAIT))
        self.assertEqual(got, {"a": 100, "b": 100})

    def test_dealer_router_over_tcp(self):
        router = self.reactor.socket("ROUTER")
        endpoint = router.bind("tcp://127.0.0.1:*")
        self.assertTrue(endpoint.startswith("tcp://127.0.0.1:"))
        self.assertNotIn("*", endpoint)
        self.assertEqual(router.last_endpoint, endpoint)

        def echo(frames):
            identity, empty, body = frames
            router.send([identity, b"", body.upper()])

        router.on_readable(echo)
        dealer = self.reactor.socket(5)  # a ZeroMQ type number: DEALER
        dealer.set("routing_id", b"me")
        self.assertEqual(dealer.get("routing_id"), b"me")
        dealer.connect(endpoint)
        replies = []
        dealer.on_readable(replies.append)
        # Frames may be empty, contain NUL bytes, and be bytearray/memoryview.
        dealer.send([b"", bytearray(b"hello\x00world")])
        dealer.send([b"", memoryview(b"x")])
        self.assertTrue(self.reactor.run_until(lambda: len(replies) == 2,
                                               WAIT))
        self.assertEqual(replies, [[b"", b"HELLO\x00WORLD"], [b"", b"X"]])

    def test_large_frames_round_trip(self):
        a = self.reactor.socket("PAIR")
        b = self.reactor.socket("PAIR")
        endpoint = a.bind("tcp://127.0.0.1:*")
        # The connecting side has its queue at once; the binding side only
        # once the TCP connection is up, so the connecting side sends.
        b.connect(endpoint)
        blob = bytes(range(256)) * 4096  # 1 MiB
        got = []
        a.on_readable(got.append)
        b.send([blob, b"", blob[:7]])
        self.assertTrue(self.reactor.run_until(lambda: got, WAIT))
        self.assertEqual(got[0], [blob, b"", blob[:7]])

    def test_bad_endpoint_raises_with_message(self):
        s = self.reactor.socket("DEALER")
        with self.assertRaises(zbrokers.ZmqError) as cm:
            s.connect("no-such-transport://x")
        self.assertIn("no-such-transport://x", str(cm.exception))
        self.assertIn("zb_socket_connect", str(cm.exception))
        with self.assertRaises(zbrokers.ZbError) as cm:
            s.bind("tcp://256.1.2.3:1")
        self.assertIn("256.1.2.3", str(cm.exception))
        self.assertEqual(cm.exception.code, -7)

    def test_address_in_use(self):
        a = self.reactor.socket("ROUTER")
        endpoint = a.bind("tcp://127.0.0.1:*")
        b = self.reactor.socket("ROUTER")
        with self.assertRaises(zbrokers.ZmqError) as cm:
            b.bind(endpoint)
        self.assertIn("in use", str(cm.exception))

    def test_unknown_socket_type_and_option(self):
        with self.assertRaises(zbrokers.InvalidArgumentError) as cm:
            self.reactor.socket("TOASTER")
        self.assertIn("TOASTER", str(cm.exception))
        s = self.reactor.socket("DEALER")
        with self.assertRaises(ValueError):
            s.set("no_such_option", 1)
        with self.assertRaises(zbrokers.ZmqError):
            s.set(9999, 1)

    def test_options(self):
        s = self.reactor.socket("DEALER")
        self.assertEqual(s.get("linger"), 0)  # the library's default
        s.set("sndhwm", 77)
        self.assertEqual(s.get("sndhwm"), 77)
        s.set("maxmsgsize", 1 << 40)  # a 64-bit option
        self.assertEqual(s.get("maxmsgsize"), 1 << 40)
        self.assertEqual(s.get("type"), 5)

    def test_router_mandatory_unreachable(self):
        router = self.reactor.socket("ROUTER")
        router.set("router_mandatory", True)
        router.bind("tcp://127.0.0.1:*")
        with self.assertRaises(zbrokers.UnreachableError):
            router.send([b"nobody", b"", b"hi"])

    def test_would_block_at_high_water_mark(self):
        s = self.reactor.socket("DEALER")  # never connected: no peer
        with self.assertRaises(zbrokers.WouldBlockError):
            s.send([b"x"])

    def test_send_type_errors(self):
        s = self.reactor.socket("PAIR")
        with self.assertRaises(TypeError):
            s.send(["text is not bytes"])
        with self.assertRaises(TypeError):
            s.send(b"a bare bytes object")
        with self.assertRaises(ValueError):
            s.send([])

    def test_close_inside_own_callback_and_stop_watching(self):
        a = self.reactor.socket("PAIR")
        b = self.reactor.socket("PAIR")
        endpoint = b.bind("tcp://127.0.0.1:*")
        a.connect(endpoint)  # the connecting side can queue at once
        got = []

        def once(frames):
            got.append(frames)
            b.close()

        b.on_readable(once)
        a.send([b"1"])
        a.send([b"2"])
        self.assertTrue(self.reactor.run_until(lambda: got, WAIT))
        self.reactor.run_once(0.02)
        self.assertEqual(got, [[b"1"]])
        self.assertTrue(b.closed)
        with self.assertRaises(zbrokers.StateError):
            b.send([b"x"])

        # on_readable(None) stops delivery; a new callback resumes it.
        c = self.reactor.socket("PAIR")
        d = self.reactor.socket("PAIR")
        c.connect(d.bind("tcp://127.0.0.1:*"))
        seen = []
        d.on_readable(seen.append)
        d.on_readable(None)
        c.send([b"queued"])
        self.reactor.run_once(0.05)
        self.assertEqual(seen, [])
        d.on_readable(seen.append)
        self.assertTrue(self.reactor.run_until(lambda: seen, WAIT))
        self.assertEqual(seen, [[b"queued"]])

    def test_socket_exception_is_reported(self):
        reported = []
        self.reactor.error_handler = lambda e, where: reported.append(where)
        a = self.reactor.socket("PAIR")
        b = self.reactor.socket("PAIR")
        a.connect(b.bind("tcp://127.0.0.1:*"))
        got = []

        def handler(frames):
            got.append(frames)
            raise ValueError("bad frames")

        b.on_readable(handler)
        a.send([b"1"])
        a.send([b"2"])
        self.assertTrue(self.reactor.run_until(lambda: len(got) == 2, WAIT))
        self.assertEqual(reported, ["socket", "socket"])

    def test_reactor_close_closes_sockets(self):
        reactor = zbrokers.Reactor()
        s = reactor.socket("DEALER")
        s.on_readable(lambda frames: None)
        reactor.close()
        self.assertTrue(s.closed)
        with self.assertRaises(zbrokers.StateError):
            s.connect("tcp://127.0.0.1:1")

    def test_with_closes_the_socket(self):
        # The same lifetime as every other object on a reactor.
        with self.reactor.socket("DEALER") as s:
            self.assertFalse(s.closed)
            self.assertIs(s.reactor, self.reactor)
        self.assertTrue(s.closed)
        self.assertEqual(repr(s), "<zbrokers.Socket closed>")
        with self.assertRaises(zbrokers.StateError):
            s.connect("tcp://127.0.0.1:1")
        s.close()  # idempotent


if __name__ == "__main__":
    unittest.main()
