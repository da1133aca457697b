#!/usr/bin/env bash
# The quick tier, for a developer's inner loop: formatting, the size limits, and every test of
# the records, storage and broker crates and of the command's own modules: the storage engine,
# the LogManager, the protocol, the coordinators and the broker over loopback, with nothing to
# install. What it leaves to the full suite (scripts/test.sh): lints, the storage docs, and the
# tests that run Kafka itself, the JVM, Python, Go and Node clients.
set -euo pipefail
cd "$(dirname "$0")/.."

# kafka-python's cross-check of the record formats runs when the full suite installed it.
venv="${FERROLOG_VENV:-$PWD/target/test-venv}"
if [ -x "$venv/bin/python" ]; then
  export FERROLOG_PYTHON="$venv/bin/python"
fi

echo "== formatting"
cargo fmt --all -- --check
echo "== size limits"
python3 scripts/check_sizes.py
echo "== layers"
python3 scripts/check_layers.py
features="ferrolog-storage/failpoints,ferrolog-broker/failpoints,ferrolog-broker/probes"
echo "== tests"
cargo test --locked --features "$features" \
  -p ferrolog-records -p ferrolog-storage -p ferrolog-protocol -p ferrolog-auth \
  -p ferrolog-coordinator -p ferrolog-net -p ferrolog-broker -p ferrolog-testkit
cargo test --locked --features "$features" -p ferrolog --bins
