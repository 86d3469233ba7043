#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Checks zb-broker.service (generated from zb-broker.service.in with the
build tree's paths, so that ExecStart exists):

  - `systemd-analyze verify` reports nothing about it (an unknown or
    misspelt directive is only a warning there, so any line that names the
    unit fails the test);
  - the hardening it promises is there (DynamicUser, ProtectSystem=strict,
    NoNewPrivileges, no capabilities, ...), and `systemd-analyze security
    --offline` rates its exposure at 2.0 or below ("OK").

Exit 77 (meson: skipped), with the reason, where systemd-analyze does not
exist: it is part of systemd, which a build container may lack.

  systemd_unit_test.py UNIT_FILE
"""

import os
import re
import shutil
import subprocess
import sys

REQUIRED = {
    "DynamicUser": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "NoNewPrivileges": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "ExecReload": "/bin/kill -HUP $MAINPID",
    "RestartPreventExitStatus": "2",
}
MAX_EXPOSURE = 2.0


def main():
    unit = os.path.abspath(sys.argv[1])
    name = os.path.basename(unit)
    settings = {}
    with open(unit) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "[")):
                key, _, value = line.partition("=")
                settings.setdefault(key, value)
    missing = {k: v for k, v in REQUIRED.items() if settings.get(k) != v}
    if missing:
        print(f"FAIL: {name} lacks {missing} (has "
              f"{ {k: settings.get(k) for k in missing} })")
        return 1
    exec_start = settings["ExecStart"].split()[0]
    if not os.access(exec_start, os.X_OK):
        print(f"FAIL: ExecStart {exec_start} is not an executable")
        return 1

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("SKIP: systemd-analyze is not installed (it comes with systemd); "
              "the unit's directives were checked above, not by systemd")
        return 77
    r = subprocess.run([analyze, "verify", "--man=no", unit],
                       capture_output=True, text=True, timeout=50)
    complaints = [l for l in (r.stdout + r.stderr).splitlines()
                  if name in l or unit in l]
    if r.returncode != 0 or complaints:
        print(f"FAIL: systemd-analyze verify (exit {r.returncode}):")
        print(r.stdout + r.stderr)
        return 1
    print(f"ok: systemd-analyze verify {name}")

    r = subprocess.run([analyze, "security", "--offline=true", unit],
                       capture_output=True, text=True, timeout=50)
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)",
                  r.stdout + r.stderr)
    if m is None:
        print("note: this systemd-analyze cannot rate a unit file offline "
              f"(systemd < 250?): {(r.stdout + r.stderr).strip()[:200]}")
        return 0
    exposure = float(m.group(1))
    print(f"systemd-analyze security --offline: exposure {exposure}")
    if exposure > MAX_EXPOSURE:
        print(f"FAIL: exposure {exposure} > {MAX_EXPOSURE}:")
        print("\n".join(l for l in r.stdout.splitlines() if "✗" in l))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
