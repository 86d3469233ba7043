#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Checks a generated man page of the project -- zb-broker(1) or zb(1): a
roff page of section 1 with its name, every flag (and command) of --help, a
default and, for zb-broker, the extra sections; and that man(1) renders it
when man is installed.

  man_page_test.py PATH/zb-broker.1
  man_page_test.py PATH/zb.1
"""

import os
import shutil
import subprocess
import sys

# help2man writes dashes as \-.
PAGES = {
    "zb-broker.1": {
        "want": [".TH ZB-BROKER \"1\"",
                 "zb-broker \\- run zbrokers message brokers",
                 ".SH FILES", ".SH \"HTTP ENDPOINTS\"", ".SH \"SEE ALSO\"",
                 "/readyz", "zb-broker.service", "SIGHUP", "[2.5s]"],
        "flags": ["majordomo", "consensus", "config", "check\\-config",
                  "log\\-level", "log\\-format", "metrics", "grace",
                  "heartbeat\\-interval", "request\\-deadline",
                  "client\\-expiry", "version"],
        "rendered": "--check-config",
    },
    "zb.1": {
        "want": ['.TH ZB "1"', "zb \\- talk to zbrokers brokers",
                 "request ENDPOINT SERVICE", "mmi ENDPOINT SERVICE",
                 "ping ENDPOINT", "worker ENDPOINT SERVICE", "keygen",
                 "[5s]"],
        "flags": ["protocol", "timeout", "retries", "json",
                  "curve\\-server\\-key", "echo", "version"],
        "rendered": "keygen",
    },
}


def main():
    path = sys.argv[1]
    spec = PAGES[os.path.basename(path)]
    with open(path) as f:
        page = f.read()
    want = spec["want"] + ["\\-\\-" + flag for flag in spec["flags"]]
    missing = [w for w in want if w not in page]
    if missing:
        print(f"FAIL: {path} lacks {missing}")
        return 1
    man = shutil.which("man")
    if man is None:
        print(f"ok: {path} (man is not installed: not rendered)")
        return 0
    r = subprocess.run([man, "-l", "-P", "cat", path], capture_output=True,
                       text=True, timeout=20,
                       env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
    if r.returncode != 0 or spec["rendered"] not in r.stdout:
        print(f"FAIL: man -l {path}: exit {r.returncode}\n{r.stderr}")
        return 1
    print(f"ok: {path} renders ({len(r.stdout.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
