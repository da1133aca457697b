#!/usr/bin/env bash
# Share-group consumption (KIP-932): 1, 4 and 16 of Kafka's KafkaShareConsumers (4.4) in one
# share group reading one partition of 2,000,000 records of 100 bytes (tools/kafka/apps/
# ShareBench.java), implicit acknowledgement, against `ferrolog serve` and Apache Kafka 4.4,
# each from an empty data dir with its defaults (share.record.lock.duration.ms 30 s,
# group.share.partition.max.record.locks 2000, heartbeat 5 s). For each run: the records
# delivered per second from the first to the last, and the broker's CPU seconds per GB
# delivered over the consuming alone. Writes target/bench-data/share.txt; takes about ten
# minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/share.txt
: > "$out"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
cargo build --release -q -p ferrolog
scripts/kafka.sh install >/dev/null
{ read -r port; read -r controller_port; } < <(free_ports 2)
data=target/bench-data/share-data
records=2000000
size=100

# `share_run NAME ADDRESS`: the three consumer counts against the broker at ADDRESS.
share_run() {
  local consumers before result
  for consumers in 1 4 16; do
    scripts/kafka.sh bench ShareBench produce "$2" "share-$consumers" "$records" "$size" 2>/dev/null
    before=$(broker_cpu)
    result=$(scripts/kafka.sh bench ShareBench consume "$2" "bench-$consumers" "share-$consumers" \
      "$consumers" "$records" 2>/dev/null | tail -1)
    python3 -c '
import json, sys
name, before, after, result, size = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5])
gigabytes = result["delivered"] * size / 1e9
print(name + "_records_per_s", result["records_per_s"])
print(name + "_cpu_per_gb", (after - before) / gigabytes)' "$1_$consumers" "$before" "$(broker_cpu)" "$result" "$size" >> "$out"
  done
}

rm -rf "$data"
"$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" >target/bench-data/share-serve.log 2>&1 &
server=$!
wait_for_port "$port"
share_run ferrolog "127.0.0.1:$port"
kill -INT "$server"
wait "$server" || true

rm -rf "$data"
server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" scripts/kafka.sh start "$data/kafka" "$port" "$controller_port")
share_run kafka "127.0.0.1:$port"
scripts/kafka.sh stop "$server"
rm -rf "$data"
cat "$out"
