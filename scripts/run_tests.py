#!/usr/bin/env python3
"""Runs every test binary of the workspace, several at a time, and the doc tests.

`cargo test` runs one test binary after another. Most of the suite's wall time is spent in a few
binaries that wait (for Kafka's JVM to start, for timeouts, for kill loops) rather than compute,
so they run side by side here, the longest first, while the quick ones fill the gaps.

Usage: scripts/run_tests.py --features F [--jobs N]

Each binary runs as cargo would run it: from its package's directory, with cargo's variables.
Its output is kept in target/test-logs/<binary>.log and printed whole when it fails; otherwise
its libtest summary line ("test result: ok. N passed; ...") is printed, so the run's log shows
how many tests each binary ran. Exits 1 if any binary failed, naming each.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, "target", "test-logs")

# Binaries that take longest (seconds on the 2-core CI machine, three at a time, measured from a
# fresh clone's run): started first so the run ends with the short ones. Binaries not named
# here are taken as short; a new long binary belongs here, or it ends the run alone.
EXPECTED_SECONDS = {
    "mixed_protocol_groups_with_kafka": 295,
    "share_groups_with_kafka": 264,
    "kafka_tools": 226,
    "streams_groups_data_dirs": 223,
    "sasl_with_real_clients": 221,
    "tls_with_real_clients": 211,
    "kafka_acls": 179,
    "consumer_protocol_other_clients": 177,
    "consumer_protocol_with_kafka": 176,
    "log_dir_moves": 164,
    "broker_configs_with_kafka": 170,
    "client_quotas_with_kafka": 150,
    "delegation_tokens_with_kafka": 143,
    "kafka_data_dirs": 140,
    "mirror_maker": 132,
    "ferrolog_to_kafka": 131,
    "transactions_with_real_clients": 109,
    "abuse": 105,
    "salvage_with_kafka": 102,
    "consumer_truncation_with_kafka": 97,
    "group_configs_with_kafka": 88,
    "streams_groups_with_kafka": 95,
    "share_groups_data_dirs": 82,
    "client_telemetry_with_kafka": 82,
    "kafka_interrupted_move": 71,
    "exactly_once_with_java": 59,
    "share_groups_crash": 59,
    "kafka_transactions_data_dir": 47,
    "transactions_survive_sigkill": 43,
    "static_membership_with_kafka": 42,
    "metrics_endpoint": 41,
    "log_dir_moves_after_sigkill": 30,
    "consumer_groups_with_real_clients": 23,
    "damage_at_scale": 22,
}


def test_binaries(features):
    """(package directory, package name, binary name, executable) of every test binary."""
    command = [
        "cargo", "test", "--workspace", "--locked", "--features", features,
        "--no-run", "--message-format=json",
    ]
    built = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, check=True, text=True)
    binaries = []
    for line in built.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        manifest = message["manifest_path"]
        package = message["package_id"].split("#")[-1].split("@")[0]
        binaries.append(
            (os.path.dirname(manifest), package, message["target"]["name"], message["executable"])
        )
    return binaries


def run(binary):
    directory, package, name, executable = binary
    env = dict(os.environ, CARGO_MANIFEST_DIR=directory, CARGO_PKG_NAME=package)
    log_path = os.path.join(LOGS, f"{package}-{name}.log")
    started = time.monotonic()
    with open(log_path, "w") as log:
        code = subprocess.run([executable], cwd=directory, env=env, stdout=log,
                              stderr=subprocess.STDOUT).returncode
    return binary, code, time.monotonic() - started, log_path


def summary(log_path):
    """The libtest summary lines of one binary's log, and the number of tests it passed."""
    lines, passed = [], 0
    with open(log_path) as log:
        for line in log:
            if line.startswith("test result:"):
                lines.append(line.rstrip())
                passed += int(line.split(". ", 1)[1].split(" passed", 1)[0])
    return lines, passed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--features", required=True)
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(LOGS, exist_ok=True)
    binaries = test_binaries(args.features)
    binaries.sort(key=lambda binary: -EXPECTED_SECONDS.get(binary[2], 0))
    failed = []
    passed_total = 0
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for done in as_completed([pool.submit(run, binary) for binary in binaries]):
            (_, package, name, _), code, seconds, log_path = done.result()
            print(f"{'ok' if code == 0 else 'FAILED':6} {package}::{name} ({seconds:.1f} s)",
                  flush=True)
            lines, passed = summary(log_path)
            passed_total += passed
            for line in lines:
                print(f"       {line}", flush=True)
            if code != 0:
                failed.append(f"{package}::{name}")
                with open(log_path) as log:
                    sys.stdout.write(log.read())
                sys.stdout.flush()
    print(f"{len(binaries)} test binaries, {passed_total} tests passed, in "
          f"{time.monotonic() - started:.0f} s, {args.jobs} at a time", flush=True)
    doc = subprocess.run(
        ["cargo", "test", "--workspace", "--locked", "--features", args.features, "--doc"],
        cwd=ROOT,
    )
    if doc.returncode != 0:
        failed.append("doc tests")
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
