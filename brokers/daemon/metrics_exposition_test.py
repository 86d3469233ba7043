#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""The real zb-broker's /metrics page after hostile requests, read by a
strict parser of the Prometheus text exposition format (issue 11, item 1).

  metrics_exposition_test.py --broker PATH/zb-broker

One zb-broker process runs both brokers with a metrics endpoint.  Peers
written here with raw pyzmq sockets then:
  - ask Majordomo for services whose names are not UTF-8
    (b"\\xfe\\xff bad utf8", a lone continuation byte, an overlong "/", a
    surrogate, a truncated sequence) or hold a double quote, a backslash, a
    newline, a NUL byte or valid non-ASCII text;
  - ask Majordomo for 1,500 more invented services (no worker ever serves
    them, so each keeps one queued request);
  - register consensus workers under names of the same kinds.
Every page scraped must pass strict_parse() below, which rejects what
Prometheus rejects (invalid UTF-8, bad escapes, malformed names, labels or
values, duplicate series, a family split in two, samples before their TYPE,
a missing final newline).  The per-service series of each broker must stay
within the default cap (1000), the rest summed under service="_other" and
counted by zb_folded_services, and nothing a peer sent may be lost from the
totals.  Every page must be one snapshot of each broker (zb_workers and
zb_queue_depth name the same services).  Bounded in time; every process started is killed and reaped.
"""

import argparse
import os
import re
import sys
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
from zb_process import Failure, check  # noqa: E402

DEFAULT_CAP = 1000  # BrokerMetrics::kDefaultMaxServices
INVENTED = 1500


# --- A strict parser of the text exposition format ---------------------------

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# Go's strconv.ParseFloat, which Prometheus uses: NaN and Inf in any case
# (prometheus-cpp writes "Nan").
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|(?i:inf(?:inity)?))|(?i:nan)")
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _family_of(name, types):
    """The family a sample belongs to (histogram/summary suffixes)."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if types.get(base) in ("histogram", "summary"):
                return base
    return name


def _parse_labels(line, i, where):
    """Parses '{name="value",...}' from line[i] == '{'; returns (labels, i)."""
    labels = {}
    i += 1
    while True:
        if i < len(line) and line[i] == "}":
            return labels, i + 1
        m = _LABEL_NAME.match(line, i)
        check(m is not None, f"{where}: bad label name at column {i}")
        name = m.group(0)
        i = m.end()
        check(line.startswith('="', i), f"{where}: expected =\" after {name}")
        i += 2
        value = []
        while True:
            check(i < len(line), f"{where}: unterminated label value")
            c = line[i]
            if c == "\\":
                check(i + 1 < len(line), f"{where}: dangling backslash")
                e = line[i + 1]
                check(e in ('\\', '"', 'n'),
                      f"{where}: invalid escape \\{e} in label {name}")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[e])
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        check(name not in labels, f"{where}: label {name} given twice")
        labels[name] = "".join(value)
        if i < len(line) and line[i] == ",":
            i += 1
            continue
        check(i < len(line) and line[i] == "}",
              f"{where}: expected , or }} after label {name}")


def strict_parse(body):
    """bytes -> {(name, frozenset(labels.items())): value}; raises Failure on
    anything the text format does not allow."""
    try:
        text = body.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        raise Failure(f"the page is not valid UTF-8: {e}") from None
    check(text == "" or text.endswith("\n"), "the page does not end in \\n")
    types, helps, samples = {}, set(), {}
    finished = set()  # families whose lines are over
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {n} ({line[:80]!r})"
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                fam = parts[2]
                check(_METRIC_NAME.fullmatch(fam), f"{where}: bad name")
                if parts[1] == "TYPE":
                    check(len(parts) == 4 and parts[3] in _TYPES,
                          f"{where}: bad TYPE")
                    check(fam not in types, f"{where}: second TYPE for {fam}")
                    check(not any(_family_of(k[0], types) == fam
                                  for k in samples),
                          f"{where}: TYPE after samples of {fam}")
                    types[fam] = parts[3]
                else:
                    check(fam not in helps, f"{where}: second HELP for {fam}")
                    helps.add(fam)
                    help_text = parts[3] if len(parts) == 4 else ""
                    check(re.fullmatch(r"(?:[^\\]|\\[\\n])*", help_text),
                          f"{where}: bad escape in HELP")
                if fam != current:
                    check(fam not in finished, f"{where}: {fam} split in two")
                    if current is not None:
                        finished.add(current)
                    current = fam
            continue
        check(line.strip() != "" or line == "", f"{where}: blank-ish line")
        if line == "":
            continue
        m = _METRIC_NAME.match(line)
        check(m is not None, f"{where}: bad metric name")
        name = m.group(0)
        i = m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = _parse_labels(line, i, where)
        rest = line[i:]
        check(rest.startswith(" "), f"{where}: no space before the value")
        fields = rest.split(" ")[1:]
        check(len(fields) in (1, 2) and _FLOAT.fullmatch(fields[0]),
              f"{where}: bad value {rest!r}")
        if len(fields) == 2:
            check(re.fullmatch(r"-?[0-9]+", fields[1]),
                  f"{where}: bad timestamp")
        fam = _family_of(name, types)
        check(fam in types, f"{where}: sample before the TYPE of {fam}")
        if fam != current:
            check(fam not in finished, f"{where}: {fam} split in two")
            if current is not None:
                finished.add(current)
            current = fam
        key = (name, frozenset(labels.items()))
        check(key not in samples, f"{where}: duplicate series")
        v = fields[0]
        samples[key] = float(v)  # Python's float() reads Inf/NaN too
    return samples


def self_test():
    """The parser must reject what it claims to reject."""
    good = (b'# HELP a_total x\n# TYPE a_total counter\n'
            b'a_total{s="q\\"\\\\\\n"} 1\n')
    strict_parse(good)
    bad = {
        "invalid UTF-8": b'# TYPE a gauge\na{s="\xfe\xff"} 1\n',
        "bad escape": b'# TYPE a gauge\na{s="\\x"} 1\n',
        "duplicate": b'# TYPE a gauge\na{s="1"} 1\na{s="1"} 2\n',
        "no TYPE": b'a 1\n',
        "split family": b'# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x="1"} 1\n',
        "bad value": b'# TYPE a gauge\na 1x\n',
        "unterminated": b'# TYPE a gauge\na{s="1} 1\n',
        "no final newline": b'# TYPE a gauge\na 1',
        "label twice": b'# TYPE a gauge\na{s="1",s="2"} 1\n',
    }
    for what, page in bad.items():
        try:
            strict_parse(page)
        except Failure:
            continue
        raise Failure(f"strict_parse accepted a page with {what}")


HOSTILE = [
    b"\xfe\xff bad utf8",
    b"lone \x80 continuation",
    b"overlong \xc0\xaf slash",
    b"surrogate \xed\xa0\x80",
    b"truncated \xe2\x82",
    b'quote " and backslash \\',
    b"new\nline",
    b"nul \x00 byte",
    "caf\u00e9 \u2603".encode(),
    b"_other",
]


def services_of(samples, family, broker):
    return {dict(k[1])["service"]: v for k, v in samples.items()
            if k[0] == family and dict(k[1]).get("broker") == broker}


def check_one_snapshot(samples, page):
    """Every page shows each broker at one snapshot: zb_workers and
    zb_queue_depth name the same services (_other included).  A scrape
    that read the two families on either side of an update named more
    services than the cap, and once showed every queue of a new snapshot
    while zb_workers had not folded into _other yet."""
    for broker in ("majordomo", "consensus"):
        w = set(services_of(samples, "zb_workers", broker))
        q = set(services_of(samples, "zb_queue_depth", broker))
        check(w == q, f"page {page}: {broker}'s zb_workers and "
              f"zb_queue_depth are from different snapshots: "
              f"{len(w - q)} services only in zb_workers "
              f"({sorted(w - q)[:5]}), {len(q - w)} only in zb_queue_depth "
              f"({sorted(q - w)[:5]})")


def run(exe):
    self_test()
    ctx = zmq.Context()
    try:
        b = zp.ZbBroker.start(exe, [
            "--majordomo", "tcp://127.0.0.1:*",
            "--consensus", "tcp://127.0.0.1:*",
            "--metrics", "127.0.0.1:0", "--stats-interval", "0s",
            "--queue-expiry", "0s"])
        mdp = b.endpoint("majordomo")
        ccp = b.endpoint("consensus")
        port = b.metrics_port()

        # Majordomo: one request per hostile and invented service.
        client = ctx.socket(zmq.DEALER)
        client.setsockopt(zmq.LINGER, 0)
        client.connect(mdp)
        mdp_names = HOSTILE + [b"invented-%05d" % i for i in range(INVENTED)]
        for name in mdp_names:
            client.send_multipart([b"", b"MDPC01", name, b"body"])
        # Consensus: one worker per hostile name (kept open).
        workers = []
        for name in HOSTILE:
            w = ctx.socket(zmq.DEALER)
            w.setsockopt(zmq.LINGER, 0)
            w.connect(ccp)
            w.send_multipart([b"", b"CCp100", b"\x01", name,
                              (60000).to_bytes(4, "big"), b"\x03"])
            workers.append(w)

        want_mdp = len(mdp_names)
        deadline = time.monotonic() + 30
        pages = 0
        while True:
            samples = strict_parse(zp.metrics_page(port))
            pages += 1
            mdp_q = services_of(samples, "zb_queue_depth", "majordomo")
            ccp_w = services_of(samples, "zb_workers", "consensus")
            check_one_snapshot(samples, pages)
            queued = sum(mdp_q.values())
            workers_seen = sum(ccp_w.values())
            if queued >= want_mdp and workers_seen >= len(HOSTILE):
                break
            check(time.monotonic() < deadline,
                  f"the page never showed everything: {queued}/{want_mdp} "
                  f"queued, {workers_seen}/{len(HOSTILE)} workers\n" + b.tail(40))
            time.sleep(0.2)

        # The cap: at most DEFAULT_CAP services of their own, plus _other.
        for fam in ("zb_queue_depth", "zb_workers"):
            series = services_of(samples, fam, "majordomo")
            check(len(series) <= DEFAULT_CAP + 1,
                  f"{fam}: {len(series)} majordomo series (cap {DEFAULT_CAP})")
            check("_other" in series, f"{fam}: no _other series")
        folded = samples.get(("zb_folded_services",
                              frozenset({"broker": "majordomo"}.items())))
        check(folded is not None, "no zb_folded_services for majordomo")
        # Distinct labels: the five invalid names keep distinct text around
        # their U+FFFD, so every name is its own label.
        check(folded == want_mdp - DEFAULT_CAP,
              f"zb_folded_services {folded}, expected "
              f"{want_mdp - DEFAULT_CAP}")
        check(sum(mdp_q.values()) == want_mdp,
              f"queued total {sum(mdp_q.values())} != {want_mdp}")
        # Consensus: few services, each under its own sanitised label.
        check("\ufffd\ufffd bad utf8" in ccp_w,
              f"no U+FFFD label for the bad name: {sorted(ccp_w)}")
        check('quote " and backslash \\' in ccp_w, "quote/backslash lost")
        check("new\nline" in ccp_w, "newline label lost")
        check("caf\u00e9 \u2603" in ccp_w, "valid UTF-8 label changed")
        check(ccp_w.get("_other") == 1.0,
              "a service named _other is summed under _other")
        check(samples.get(("zb_folded_services",
                           frozenset({"broker": "consensus"}.items()))) == 1,
              "consensus zb_folded_services should count the one _other")
        # A few more scrapes while nothing changes: still valid.
        for _ in range(3):
            check_one_snapshot(strict_parse(zp.metrics_page(port)), pages)
            pages += 1
        for w in workers:
            w.close()
        client.close()
        code = b.stop(timeout=20)
        check(code == 0, f"zb-broker exit code {code}\n" + b.tail(40))
        print(f"metrics_exposition_test: OK ({pages} pages parsed, "
              f"{int(folded)} majordomo services folded)")
        return 0
    finally:
        zp.kill_all()
        ctx.destroy(linger=0)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    args = ap.parse_args(argv)
    try:
        return run(args.broker)
    except Failure as e:
        print("FAIL:", e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
