#!/usr/bin/env python3
"""Checks the broker's layers: a lower module never names a higher one.

Bottom to top (ARCHITECTURE.md, "The broker"): `protocol` (the API table, what makes a request
unanswerable) and `authz` (the ACL model); above them `frame_shape` (frame checks) and `sasl`;
then `coordinator`, `group` and `txn`; then `handlers`; then `dispatch` (the router); then
`network`. Each rule below names the modules a layer may not use. Test files are not checked.

Exits 1 naming every offending `use` as `path:line`.
"""

import os
import re
import sys

BROKER = os.path.join("crates", "broker", "src")

HIGHER_THAN_PROTOCOL = ["dispatch", "handlers", "network", "frame_shape", "sasl", "group", "txn",
                        "coordinator"]
FORBIDDEN = {
    "protocol": HIGHER_THAN_PROTOCOL,
    "authz": HIGHER_THAN_PROTOCOL + ["protocol"],
    "frame_shape": ["dispatch", "handlers", "network", "sasl", "group", "txn", "coordinator"],
    "sasl": ["dispatch", "handlers", "network", "group", "txn", "coordinator"],
    "coordinator": ["dispatch", "handlers", "network", "group", "txn", "sasl", "frame_shape"],
    "group": ["dispatch", "handlers", "network", "sasl", "frame_shape"],
    "txn": ["dispatch", "handlers", "network", "sasl", "frame_shape"],
    "handlers": ["dispatch", "network"],
    "dispatch": ["network"],
}

USE = re.compile(r"\bcrate::(\w+)")


def is_test(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or f"{os.sep}tests{os.sep}" in path


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        paths = [os.path.join(BROKER, f"{layer}.rs")]
        for directory, _, files in os.walk(os.path.join(BROKER, layer)):
            paths += [os.path.join(directory, name) for name in files if name.endswith(".rs")]
        for path in paths:
            if not os.path.exists(path) or is_test(path):
                continue
            with open(path, encoding="utf-8") as file:
                for number, line in enumerate(file, 1):
                    if line.lstrip().startswith("//"):
                        continue
                    for used in USE.findall(line):
                        if used in forbidden:
                            problems.append(f"{path}:{number}: {layer} uses crate::{used}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} uses of a higher layer", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
