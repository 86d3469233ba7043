# Copyright 2026 The zbrokers Authors.
"""The heartbeat keywords carry the glossary's names (docs/glossary.md).

MdpBroker, MdpWorker and ConsensusWorker take heartbeat_interval= and
heartbeat_liveness=.  The old spellings (heartbeat=, liveness=, and the
consensus worker's retries=) still work, with a DeprecationWarning naming
the new keyword; giving an old one together with its new one is a
TypeError.

Each case swaps the C constructor for a recorder that refuses, so the test
sees exactly which values reach C without creating anything."""

import unittest
import warnings
from unittest import mock

import zbrokers
from zbrokers import _native

ENDPOINT = "tcp://127.0.0.1:1"  # never connected


def _handler(frames):
    return frames


class Case:
    """One constructor: its C function and where in that call the
    heartbeat interval (microseconds) and liveness go."""

    def __init__(self, name, c_function, interval_at, liveness_at, make):
        self.name = name
        self.c_function = c_function
        self.interval_at = interval_at
        self.liveness_at = liveness_at
        self.make = make


CASES = [
    Case("MdpBroker", "zb_mdp_broker_new", 1, 2,
         lambda r, **kw: zbrokers.MdpBroker(r, **kw)),
    Case("MdpWorker", "zb_mdp_worker_new_curve", 4, 5,
         lambda r, **kw: zbrokers.MdpWorker(r, ENDPOINT, b"echo", _handler,
                                            **kw)),
    Case("ConsensusWorker", "zb_consensus_worker_new_curve", 4, 5,
         lambda r, **kw: zbrokers.ConsensusWorker(r, ENDPOINT, b"echo",
                                                  _handler, **kw)),
]

# The deprecated spelling of each new keyword, per class (the glossary's
# heartbeat_interval and heartbeat_liveness rows).
OLD_NAMES = {
    "MdpBroker": {"heartbeat_interval": "heartbeat",
                  "heartbeat_liveness": "liveness"},
    "MdpWorker": {"heartbeat_interval": "heartbeat",
                  "heartbeat_liveness": "liveness"},
    "ConsensusWorker": {"heartbeat_interval": "heartbeat",
                        "heartbeat_liveness": "retries"},
}


class HeartbeatKeywordsTest(unittest.TestCase):

    def setUp(self):
        self.reactor = zbrokers.Reactor()

    def tearDown(self):
        self.reactor.close()

    def construct(self, case, **kwargs):
        """Runs case's constructor with `kwargs` against a C function that
        records its arguments and fails; returns the recorded arguments."""
        calls = []

        def refuse(*args):
            calls.append(args)
            return _native.ZB_ERR_INVALID

        base = len(_native._callbacks)
        with mock.patch.object(_native.lib, case.c_function, refuse):
            with self.assertRaises(zbrokers.InvalidArgumentError):
                case.make(self.reactor, **kwargs)
        self.assertEqual(len(_native._callbacks), base)
        self.assertEqual(len(calls), 1, case.name)
        return calls[0]

    def assertReached(self, case, args, interval_us, liveness):
        self.assertEqual(args[case.interval_at], interval_us, case.name)
        self.assertEqual(args[case.liveness_at], liveness, case.name)

    def test_new_keywords_reach_c_without_warning(self):
        for case in CASES:
            with self.subTest(case.name), warnings.catch_warnings():
                warnings.simplefilter("error")  # any warning fails
                args = self.construct(case, heartbeat_interval=0.3,
                                      heartbeat_liveness=7)
                self.assertReached(case, args, 300_000, 7)

    def test_old_keywords_warn_naming_the_new_one(self):
        for case in CASES:
            for new, old in OLD_NAMES[case.name].items():
                with self.subTest(case.name, keyword=old):
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        value = 0.3 if new == "heartbeat_interval" else 7
                        args = self.construct(case, **{old: value})
                    deprecations = [w for w in caught
                                    if w.category is DeprecationWarning]
                    self.assertEqual(len(deprecations), 1, caught)
                    text = str(deprecations[0].message)
                    self.assertIn(f"{old}=", text)
                    self.assertIn(f"{new}=", text)
                    self.assertIn(case.name, text)
                    # Attributed to the caller's line, not to zbrokers.
                    self.assertEqual(deprecations[0].filename, __file__)
                    if new == "heartbeat_interval":
                        self.assertEqual(args[case.interval_at], 300_000)
                    else:
                        self.assertEqual(args[case.liveness_at], 7)

    def test_old_and_new_together_is_a_type_error(self):
        for case in CASES:
            for new, old in OLD_NAMES[case.name].items():
                with self.subTest(case.name, keyword=old):
                    base = len(_native._callbacks)
                    with self.assertRaises(TypeError) as ctx:
                        case.make(self.reactor, **{old: 1, new: 1})
                    self.assertIn(f"{old}=", str(ctx.exception))
                    self.assertIn(f"{new}=", str(ctx.exception))
                    self.assertEqual(len(_native._callbacks), base)

    def test_defaults_are_unchanged(self):
        expected = {"MdpBroker": (2_500_000, 3), "MdpWorker": (2_500_000, 3),
                    "ConsensusWorker": (1_000_000, 3)}
        for case in CASES:
            with self.subTest(case.name):
                args = self.construct(case)
                self.assertReached(case, args, *expected[case.name])

    def test_bad_interval_names_the_new_keyword(self):
        for case in CASES:
            with self.subTest(case.name):
                with self.assertRaises(TypeError) as ctx:
                    case.make(self.reactor, heartbeat_interval="soon")
                self.assertIn("heartbeat_interval must be a number",
                              str(ctx.exception))

    def test_unknown_keyword_is_still_a_type_error(self):
        for case in CASES:
            with self.subTest(case.name):
                with self.assertRaises(TypeError):
                    case.make(self.reactor, heartbeat_intervall=1.0)

    def test_signatures_show_the_new_names(self):
        import inspect
        for cls in (zbrokers.MdpBroker, zbrokers.MdpWorker,
                    zbrokers.ConsensusWorker):
            with self.subTest(cls.__name__):
                params = inspect.signature(cls).parameters
                self.assertIn("heartbeat_interval", params)
                self.assertIn("heartbeat_liveness", params)
                self.assertNotIn("heartbeat", params)
                self.assertNotIn("liveness", params)
                self.assertNotIn("retries", params)


if __name__ == "__main__":
    unittest.main()
