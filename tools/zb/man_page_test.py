#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Checks the generated zb(1): a man page (roff, section 1) with the name,
every command and flag of `zb --help` and a default, and that man(1)
renders it when man is installed.

  man_page_test.py PATH/zb.1
"""

import os
import shutil
import subprocess
import sys


def main():
    path = sys.argv[1]
    with open(path) as f:
        page = f.read()
    want = ['.TH ZB "1"', "zb \\- talk to zbrokers brokers"]
    for command in ("request ENDPOINT SERVICE", "mmi ENDPOINT SERVICE",
                    "ping ENDPOINT", "worker ENDPOINT SERVICE", "keygen"):
        want.append(command)
    # help2man writes dashes as \-.
    for flag in ("protocol", "timeout", "retries", "json",
                 "curve\\-server\\-key", "echo", "version"):
        want.append("\\-\\-" + flag)
    want.append("[5s]")  # a default
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
    if r.returncode != 0 or "keygen" not in r.stdout:
        print(f"FAIL: man -l {path}: exit {r.returncode}\n{r.stderr}")
        return 1
    print(f"ok: {path} renders ({len(r.stdout.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
