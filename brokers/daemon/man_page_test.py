#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Checks the generated zb-broker(1): a man page (roff, section 1) with the
name, every flag of --help, the defaults, and the extra sections, and that
man(1) renders it when man is installed.

  man_page_test.py PATH/zb-broker.1
"""

import os
import shutil
import subprocess
import sys


def main():
    path = sys.argv[1]
    with open(path) as f:
        page = f.read()
    want = [".TH ZB-BROKER \"1\"", "zb-broker \\- run zbrokers message brokers",
            ".SH FILES", ".SH \"HTTP ENDPOINTS\"", ".SH \"SEE ALSO\"",
            "/readyz", "zb-broker.service", "SIGHUP"]
    # Every long flag of --help (help2man writes dashes as \-).
    for flag in ("majordomo", "consensus", "config", "check\\-config",
                 "log\\-level", "log\\-format", "metrics", "grace",
                 "heartbeat\\-interval", "request\\-deadline",
                 "client\\-expiry", "version"):
        want.append("\\-\\-" + flag)
    want.append("[2.5s]")  # a default
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
    if r.returncode != 0 or "--check-config" not in r.stdout:
        print(f"FAIL: man -l {path}: exit {r.returncode}\n{r.stderr}")
        return 1
    print(f"ok: {path} renders ({len(r.stdout.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
