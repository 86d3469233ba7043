# Copyright 2026 The zbrokers Authors.
"""CURVE from Python: keys, and round trips through a zb-broker process with
CURVE endpoints (ZB_BROKER names the executable; meson sets it)."""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import zbrokers

WAIT = 10.0
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class CurveKeysTest(unittest.TestCase):

    def test_keypair_public_and_repr(self):
        self.assertTrue(zbrokers.has_curve())
        pub, sec = zbrokers.curve_keypair()
        self.assertEqual(len(pub), 40)
        self.assertEqual(len(sec), 40)
        self.assertEqual(zbrokers.curve_public(sec), pub)
        server, _ = zbrokers.curve_keypair()
        keys = zbrokers.CurveKeys(server, sec)
        self.assertEqual(keys.public_key, pub)
        self.assertNotIn(sec, repr(keys))
        self.assertIn("<hidden>", repr(keys))

    def test_bad_keys(self):
        pub, sec = zbrokers.curve_keypair()
        with self.assertRaises(ValueError):
            zbrokers.CurveKeys("short", sec)
        with self.assertRaises(ValueError):
            zbrokers.CurveKeys(pub, sec, public_key=zbrokers.curve_keypair()[0])
        with self.assertRaises(zbrokers.InvalidArgumentError) as e:
            zbrokers.curve_public(" " * 40)  # 40 characters, not Z85
        self.assertNotIn(sec, str(e.exception))
        reactor = zbrokers.Reactor()
        try:
            with self.assertRaises(TypeError):
                zbrokers.MdpClient(reactor, "tcp://127.0.0.1:1", curve="x")
        finally:
            reactor.close()

    def test_read_key_file(self):
        d = tempfile.mkdtemp()
        try:
            pub, _ = zbrokers.curve_keypair()
            path = os.path.join(d, "a.pub")
            with open(path, "w") as f:
                f.write(f"# a comment\n\n{pub} label\n")
            self.assertEqual(zbrokers.read_key_file(path), pub)
            with open(path, "w") as f:
                f.write("nope\n")
            with self.assertRaises(ValueError):
                zbrokers.read_key_file(path)
        finally:
            shutil.rmtree(d)


@unittest.skipUnless(os.environ.get("ZB_BROKER"),
                     "ZB_BROKER is not set (meson sets it to zb-broker)")
class CurveRoundTripTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="zb_py_curve_")
        self.server = zbrokers.curve_keypair()
        self.alice = zbrokers.curve_keypair()
        self.mallory = zbrokers.curve_keypair()
        secret = os.path.join(self.dir, "broker.secret")
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.server[1] + "\n")
        allow = os.path.join(self.dir, "clients")
        with open(allow, "w") as f:
            f.write(self.alice[0] + " alice\n")
        self.proc = subprocess.Popen(
            [os.environ["ZB_BROKER"],
             "--majordomo-curve", "tcp://127.0.0.1:*",
             "--consensus-curve", "tcp://127.0.0.1:*",
             "--curve-secret-key-file", secret, "--curve-allowlist", allow,
             "--heartbeat-interval", "500ms", "--stats-interval", "0s"],
            stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        self.lines = []
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.lines.append(line)
                if "ready:" in line or "error" in line:
                    ready.set()
            ready.set()
        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        self.assertTrue(ready.wait(20), "zb-broker did not start")
        text = "".join(self.lines)
        self.mdp = re.search(r"majordomo: listening on (\S+) \(CURVE\)",
                             text).group(1)
        self.ccp = re.search(r"consensus: listening on (\S+) \(CURVE\)",
                             text).group(1)
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.assertEqual(self.proc.wait(15), 0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.reader.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.assertNotIn(self.server[1], "".join(self.lines))

    def keys(self, own):
        return zbrokers.CurveKeys(self.server[0], own[1])

    def mdp_request(self, keys, timeout):
        client = zbrokers.MdpClient(self.reactor, self.mdp, timeout=timeout,
                                    curve=keys)
        results = []
        client.request(b"echo", [b"hi"], results.append)
        self.reactor.run_until(lambda: results, timeout + WAIT)
        client.close()
        return results[0]

    def test_majordomo(self):
        zbrokers.MdpWorker(self.reactor, self.mdp, b"echo", lambda f: f,
                           heartbeat_interval=0.5, curve=self.keys(self.alice))
        result = None
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:  # until the worker registered
            result = self.mdp_request(self.keys(self.alice), 1.0)
            if result.ok:
                break
        self.assertTrue(result.ok, result)
        self.assertEqual(result.frames, [b"hi"])
        refused = self.mdp_request(self.keys(self.mallory), 0.5)
        self.assertEqual(refused.outcome, "timeout", refused)

    def test_consensus(self):
        zbrokers.ConsensusWorker(self.reactor, self.ccp, b"echo", lambda f: f,
                                 curve=self.keys(self.alice))
        client = zbrokers.ConsensusClient(self.reactor, self.ccp,
                                          curve=self.keys(self.alice))
        results = []
        client.request(b"echo", [b"x"], results.append, timeout=5.0,
                       retry_no_workers=True)
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        self.assertTrue(results[0].ok, results[0].reason)
        self.assertEqual(results[0].frames, [b"x"])
        stranger = zbrokers.ConsensusClient(self.reactor, self.ccp,
                                            curve=self.keys(self.mallory))
        results = []
        stranger.request(b"echo", [b"x"], results.append, timeout=0.5)
        self.assertTrue(self.reactor.run_until(lambda: results, WAIT))
        self.assertEqual(results[0].outcome, "timeout")


if __name__ == "__main__":
    unittest.main()
