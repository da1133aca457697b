#!/usr/bin/env bash
# Runs every ferrolog test, installing first what the tests need: a Python virtualenv with
# kafka-python and its codecs (an independent implementation of Kafka's record formats and a
# real Kafka client), kcat from the distribution, Apache Kafka 4.4.0 from Maven Central, the Go
# clients and kafkajs.
# Works on a fresh Debian-like machine with Rust and Python 3 installed; CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${FERROLOG_VENV:-$PWD/target/test-venv}"
if ! "$venv/bin/python" -c "import kafka, lz4, zstandard, xxhash, snappy, confluent_kafka" 2>/dev/null; then
  echo "== installing test dependencies into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/test-requirements.txt
fi
export FERROLOG_PYTHON="$venv/bin/python"

# kcat (librdkafka's command-line client) from the distribution, for the broker tests.
if ! command -v kcat >/dev/null 2>&1; then
  echo "== installing kcat"
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get install -y -q kcat >/dev/null 2>&1 \
    || { sudo_if_needed apt-get update -q >/dev/null && sudo_if_needed apt-get install -y -q kcat >/dev/null; }
fi

# openssl, which makes the certificates of the TLS tests as an operator would.
if ! command -v openssl >/dev/null 2>&1; then
  echo "== installing openssl"
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get install -y -q openssl >/dev/null 2>&1 \
    || { sudo_if_needed apt-get update -q >/dev/null && sudo_if_needed apt-get install -y -q openssl >/dev/null; }
fi

# Apache Kafka 4.4.0 itself (its broker, tools and Java client; tools/kafka/pom.xml), the
# reference the Kafka tests compare ferrolog with. Needs Java 17+ and Maven.
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "== installing Java and Maven"
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get update -q >/dev/null
  sudo_if_needed apt-get install -y -q openjdk-17-jdk-headless maven >/dev/null
fi
bash scripts/kafka.sh install

# The request schemas and error-code walks generated from Kafka's message definitions, in that
# Kafka's jar, must be what scripts/gen_protocol.py writes for the API table, and the API keys
# and codecs what scripts/gen_messages.py writes.
echo "== generated protocol files"
if compgen -G "target/kafka/libs/kafka-clients-*.jar" >/dev/null; then
  python3 scripts/gen_protocol.py --check
  python3 scripts/gen_messages.py --check
else
  echo "no target/kafka/libs/kafka-clients-*.jar: not checked"
fi

# The Go clients franz-go and sarama (tools/goclients), built into target/ with their modules
# cached there.
if ! command -v go >/dev/null 2>&1; then
  echo "== installing Go"
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get install -y -q golang-go >/dev/null
fi
echo "== building the Go clients"
(cd tools/goclients && GOMODCACHE="$PWD/../../target/go/mod" GOCACHE="$PWD/../../target/go/cache" \
  GOFLAGS=-mod=readonly go build -o ../../target/goclients/goclients .)

# kafkajs (tools/nodeclients), installed into target/ from its lock file.
if ! command -v npm >/dev/null 2>&1; then
  echo "== installing Node.js"
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get update -q >/dev/null
  sudo_if_needed apt-get install -y -q nodejs npm >/dev/null
fi
if ! cmp -s tools/nodeclients/package-lock.json target/nodeclients/package-lock.json \
  || [ ! -d target/nodeclients/node_modules/kafkajs ]; then
  echo "== installing the Node.js clients"
  rm -rf target/nodeclients
  mkdir -p target/nodeclients
  cp tools/nodeclients/package.json tools/nodeclients/package-lock.json target/nodeclients/
  (cd target/nodeclients && npm ci --no-audit --no-fund --cache "$PWD/../npm-cache" >/dev/null)
fi

# A whole-suite run gains little from incremental compilation, whose caches would nearly double
# target/ on a fresh clone; a developer's own setting is kept.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "== formatting"
cargo fmt --all -- --check
# No file over 600 lines, no product function over 100 (scripts/check_sizes.py says how each
# is measured).
echo "== size limits"
python3 scripts/check_sizes.py
echo "== layers"
python3 scripts/check_layers.py
# The storage crate's fault-injection points are compiled in for the tests that arm them
# (crates/storage/src/fault.rs); one feature set for lints and tests keeps it one build.
features="ferrolog-storage/failpoints,ferrolog-broker/failpoints,ferrolog-broker/probes"
echo "== lints"
cargo clippy --workspace --all-targets --locked --features "$features" -- -D warnings
# The storage crate is a library others embed: its public items are documented (the crate's
# `missing_docs` lint, an error under -D warnings above) and its docs must build without a
# broken link.
echo "== storage docs"
RUSTDOCFLAGS="-D warnings" cargo doc -p ferrolog-storage --no-deps --locked
# Every test binary, three at a time (most of the suite's time is spent waiting on Kafka's JVM,
# timeouts and kill loops, not computing), then the doc tests.
echo "== tests"
python3 scripts/run_tests.py --features "$features" --jobs "${FERROLOG_TEST_JOBS:-3}"
