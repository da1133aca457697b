#!/usr/bin/env bash
# The group rebalance benchmark: 50 of Kafka's Java consumers in one group over a topic of 200
# partitions (tools/kafka/apps/GroupRebalanceBench.java), the time to a stable assignment
# after a member joins and after one leaves, five rounds each, with group.protocol=consumer
# (KIP-848: the broker's default assignor, uniform) and with group.protocol=classic (the client's
# default assignors: range, eager). Against `ferrolog serve` and Apache Kafka 4.4, each from an
# empty data dir, with the same group settings, in two configurations: Kafka's defaults
# (consumer-group heartbeat 5000 ms, assignment interval 1000 ms; the classic client's
# heartbeat 3000 ms), and `fast` (every heartbeat 200 ms, assignment interval 0), where the
# broker's own time shows past the heartbeat's; group.initial.rebalance.delay.ms=0 in both.
# Writes target/bench-data/groups.txt (milliseconds: medians and slowest rounds; the broker's
# CPU seconds over each protocol's whole run) for scripts/bench_report_groups.py. Called by
# scripts/bench.sh; takes about 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/groups.txt
runs=target/bench-data/groups-runs.txt
: > "$out"
: > "$runs"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
cargo build --release -q -p ferrolog
scripts/kafka.sh install >/dev/null
{ read -r port; read -r controller_port; } < <(free_ports 2)
data=target/bench-data/groups-data
members=50
partitions=200
rounds=5

# `group_run NAME ADDRESS PROTOCOL [CLASSIC_HEARTBEAT_MS]`: one benchmark run, its medians
# appended to the runs file.
group_run() {
  local before result
  before=$(broker_cpu)
  result=$(scripts/kafka.sh bench GroupRebalanceBench "$2" "rebalance-$3" "$partitions" "$3" \
    "$members" "$rounds" ${4:+"$4"} 2>/dev/null | tail -1)
  python3 -c '
import json, statistics, sys
name, before, after, result = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
print(name + "_initial", result["initial_ms"])
print(name + "_join", statistics.median(result["join_ms"]))
print(name + "_leave", statistics.median(result["leave_ms"]))
print(name + "_join_max", max(result["join_ms"]))
print(name + "_leave_max", max(result["leave_ms"]))
print(name + "_broker_cpu", after - before)' "$1_$3" "$before" "$(broker_cpu)" "$result" >> "$runs"
}

fast=(group.consumer.min.heartbeat.interval.ms=200 group.consumer.heartbeat.interval.ms=200
  group.consumer.assignment.interval.ms=0)

# `configuration PREFIX CLASSIC_HEARTBEAT_MS SETTINGS...`: both brokers, both protocols.
configuration() {
  local prefix=$1 heartbeat=$2 overrides=() setting
  shift 2
  for setting in group.initial.rebalance.delay.ms=0 "$@"; do
    overrides+=(--override "$setting")
  done
  rm -rf "$data"
  "$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" "${overrides[@]}" \
    >target/bench-data/groups-serve.log 2>&1 &
  server=$!
  wait_for_port "$port"
  group_run "${prefix}ferrolog" "127.0.0.1:$port" consumer
  group_run "${prefix}ferrolog" "127.0.0.1:$port" classic "$heartbeat"
  kill -INT "$server"
  wait "$server" || true

  rm -rf "$data"
  server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" FERROLOG_KAFKA_EXTRA="$(printf '%s\n' "$@")" \
    scripts/kafka.sh start "$data/kafka" "$port" "$controller_port")
  group_run "${prefix}kafka" "127.0.0.1:$port" consumer
  group_run "${prefix}kafka" "127.0.0.1:$port" classic "$heartbeat"
  scripts/kafka.sh stop "$server"
  rm -rf "$data"
}

configuration "" 3000
configuration fast_ 200 "${fast[@]}"
cp "$runs" "$out"
cat "$out"
