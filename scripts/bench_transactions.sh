#!/usr/bin/env bash
# The transactions benchmark: Kafka's Java producer (tools/kafka/apps/TransactionsBench.java, on
# transactions v2 with both brokers) writes 500,000 messages of 1 KiB in transactions of 1,000
# and of 10,000 messages, and idempotently outside any transaction (acks=all, as a transactional
# producer writes); librdkafka (tools/loadgen, transactions v1) writes 50,000 in transactions of
# 1,000 and of 10,000. Against `ferrolog serve` and Apache Kafka 4.4, each from an empty data
# dir, three rounds with the order of the transfers rotating. Writes
# target/bench-data/transactions.txt (medians: rates, and the broker's CPU seconds per GB) for
# scripts/bench_report.py. Called by scripts/bench.sh; takes about 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/transactions.txt
: > "$out"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
build_ferrolog_and_loadgen
scripts/kafka.sh install >/dev/null
runs=target/bench-data/transactions-runs.txt
{ read -r port; read -r controller_port; } < <(free_ports 2)
data=target/bench-data/transactions-data

# `java_load NAME ADDRESS TOPIC MESSAGES PER_TRANSACTION`: one Java transfer, appended to the
# runs file: its rate, the client's CPU seconds per GB in the timed part, and the broker's over
# the client's whole run.
java_load() {
  local name=$1 address=$2 before result
  before=$(broker_cpu)
  result=$(scripts/kafka.sh bench TransactionsBench "$address" "$3" "$4" "$5" 1024 2>/dev/null | tail -1)
  python3 -c '
import json, sys
name, before, after, result = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
gigabytes = result["bytes"] / 1e9
print(name, result["bytes_per_second"])
print(name + "_client_cpu", result["cpu_seconds"] / gigabytes)
print(name + "_broker_cpu", (after - before) / gigabytes)' "$name" "$before" "$(broker_cpu)" "$result" \
    >> "$runs"
}

# `transfers BROKER ADDRESS`: every transfer of a round against one broker, in the round's order.
transfers() {
  local kinds=(idempotent txn1000 txn10000) shift=$((run % 3)) kind
  kinds=("${kinds[@]:$shift}" "${kinds[@]:0:$shift}")
  for kind in "${kinds[@]}"; do
    case "$kind" in
      idempotent) java_load "$1_java_idempotent" "$2" "idempotent-$run" 500000 0 ;;
      txn1000) java_load "$1_java_txn1000" "$2" "txn1000-$run" 500000 1000 ;;
      txn10000) java_load "$1_java_txn10000" "$2" "txn10000-$run" 500000 10000 ;;
    esac
  done
  load "$1_rdkafka_txn1000" "$2" --topic "rd1000-$run" --messages 50000 --set acks=all \
    produce --transaction-records 1000
  load "$1_rdkafka_txn10000" "$2" --topic "rd10000-$run" --messages 50000 --set acks=all \
    produce --transaction-records 10000
}

: > "$runs"
for run in 1 2 3; do
  rm -rf "$data"
  "$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" \
    >target/bench-data/transactions-serve.log 2>&1 &
  server=$!
  wait_for_port "$port"
  transfers ferrolog "127.0.0.1:$port"
  kill -INT "$server"
  wait "$server" || true

  rm -rf "$data"
  server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" \
    scripts/kafka.sh start "$data/kafka" "$port" "$controller_port")
  transfers kafka "127.0.0.1:$port"
  scripts/kafka.sh stop "$server"
done
rm -rf "$data"
medians_to "$out"
cat "$out"
