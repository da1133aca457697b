#!/usr/bin/env bash
# Client quotas at work (tools/kafka/apps/QuotaBench.java): a Java producer and consumer
# limited to 1 MB/s (producer_byte_rate and consumer_byte_rate on their client ids) run for a
# minute beside a producer under no quota sending 20 MB/s, against `ferrolog serve` and Apache
# Kafka 4.4, each from an empty data dir with the same quota windows (Kafka's defaults: 11 of
# 1 s). Reports the limited clients' rates in the bytes their quotas count (over the minute, and
# past its first ten seconds), their throttle times as their own metrics give them, and the
# free producer's rate alone (20 s) and beside them. Writes target/bench-data/quotas.txt; takes
# about six minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/quotas.txt
: > "$out"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
cargo build --release -q -p ferrolog
scripts/kafka.sh install >/dev/null
{ read -r port; read -r controller_port; } < <(free_ports 2)
data=target/bench-data/quota-data
seconds=60
rate=1000000
free_rate=20000000

# `quota_run NAME ADDRESS`: the run against the broker at ADDRESS, its figures prefixed NAME.
quota_run() {
  local result
  result=$(scripts/kafka.sh bench QuotaBench "$2" "$seconds" "$rate" "$free_rate" 2>/dev/null | tail -1)
  python3 -c '
import json, sys
name, result = sys.argv[1], json.loads(sys.argv[2])
for key, value in result.items():
    print(f"{name}_{key} {value}")' "$1" "$result" >> "$out"
}

rm -rf "$data"
"$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" >target/bench-data/quota-serve.log 2>&1 &
server=$!
wait_for_port "$port"
quota_run ferrolog "127.0.0.1:$port"
kill -INT "$server"
wait "$server" || true

rm -rf "$data"
server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" scripts/kafka.sh start "$data/kafka" "$port" "$controller_port")
quota_run kafka "127.0.0.1:$port"
scripts/kafka.sh stop "$server"
rm -rf "$data"
cat "$out"
