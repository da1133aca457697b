#!/usr/bin/env python3
"""Checks the direction of dependencies: between the workspace's crates, and between the
layers inside a crate. A lower part never names a higher one.

Crates, bottom to top (ARCHITECTURE.md, "Crates and layers"): records; storage; protocol;
auth and coordinator (side by side, neither using the other); net (on auth); broker; cli. Cargo refuses cycles, but not
an edge that goes up without making one (coordinator using auth): the table below does.

Inside a crate, each rule names the modules a layer may not use (`crate::<module>`). Test files
are not checked.

Exits 1 naming every offending dependency (`Cargo.toml` of the crate) or `use` (`path:line`).
"""

import os
import re
import sys

# Each crate's directory, package name and the workspace crates it may depend on.
CRATES = {
    "records": ("ferrolog-records", []),
    "storage": ("ferrolog-storage", ["records"]),
    "protocol": ("ferrolog-protocol", ["records", "storage"]),
    "auth": ("ferrolog-auth", ["records", "storage", "protocol"]),
    "coordinator": ("ferrolog-coordinator", ["records", "storage", "protocol"]),
    "net": ("ferrolog-net", ["records", "storage", "protocol", "auth"]),
    "broker": ("ferrolog-broker", ["records", "storage", "protocol", "auth", "coordinator", "net"]),
    "cli": ("ferrolog", ["records", "storage", "protocol", "auth", "coordinator", "net", "broker"]),
    "testkit": ("ferrolog-testkit", ["records", "storage"]),
}

# Inside a crate: layer -> the modules it may not use.
MODULES = {
    "coordinator": {
        "runtime": ["group", "txn"],
        "group": ["txn"],
    },
    "protocol": {
        "acl": ["apis", "needs", "frame_shape", "error_codes", "response", "errors"],
        "errors": ["apis", "needs", "frame_shape", "error_codes", "response"],
        "needs": ["apis", "frame_shape", "error_codes", "response"],
        "apis": ["frame_shape", "error_codes", "response"],
    },
    "storage": {
        "segment": ["log", "manager", "cleaner"],
        "log": ["manager"],
        "cleaner": ["manager"],
    },
    "net": {
        "bridge": ["network", "transfer", "metrics", "reply"],
        "reply": ["network", "transfer", "metrics"],
        "transfer": ["metrics"],
    },
    "broker": {
        "refuse": ["handlers", "dispatch", "service"],
        "fetch_waiters": ["handlers", "dispatch", "service"],
        "dynamic_configs": ["handlers", "dispatch", "service"],
        "loggers": ["handlers", "dispatch", "service"],
        "share_sessions": ["handlers", "dispatch", "service"],
        "share_partitions": ["handlers", "dispatch", "service"],
        "telemetry": ["handlers", "dispatch", "service"],
        "handlers": ["dispatch", "service"],
        "dispatch": ["service"],
    },
}

USE = re.compile(r"\bcrate::(\w+)")
DEPENDENCY = re.compile(r'^(ferrolog[\w-]*)\s*=', re.MULTILINE)


def is_test(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or f"{os.sep}tests{os.sep}" in path


def crate_problems():
    problems = []
    names = {package: directory for directory, (package, _) in CRATES.items()}
    for directory, (_, allowed) in CRATES.items():
        manifest = os.path.join("crates", directory, "Cargo.toml")
        with open(manifest, encoding="utf-8") as file:
            text = file.read()
        # Only normal dependencies: dev-dependencies may reach anything below the tests.
        normal = text.split("[dev-dependencies]")[0]
        for package in DEPENDENCY.findall(normal):
            used = names.get(package)
            if used is None:
                problems.append(f"{manifest}: unknown workspace crate {package}")
            elif used not in allowed:
                problems.append(f"{manifest}: {directory} may not depend on {used}")
    return problems


def module_problems():
    problems = []
    for crate, layers in MODULES.items():
        source = os.path.join("crates", crate, "src")
        for layer, forbidden in layers.items():
            paths = [os.path.join(source, f"{layer}.rs")]
            for directory, _, files in os.walk(os.path.join(source, layer)):
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
    return problems


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    missing = [d for d in os.listdir("crates") if d not in CRATES]
    problems = [f"crates/{d}: not in the layer table" for d in missing]
    problems += crate_problems() + module_problems()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} dependencies on a higher layer", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
