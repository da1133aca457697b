#!/usr/bin/env bash
# ferrolog against Apache Kafka 4.4 on this machine, in the same run: the same clients and
# workloads against `ferrolog serve` (its defaults) and Kafka (scripts/kafka.sh, the JVM settings
# of its own kafka-server-start.sh), each from an empty data dir on the same file system, the two
# taking turns, ROUNDS rounds (default 3). Each round, per broker:
#
#   - Kafka's kafka-producer-perf-test (the Java client at its defaults, acks=1 and acks=all) and
#     then kafka-consumer-perf-test, 1 KiB records, one partition and 64, unthrottled;
#   - librdkafka (tools/loadgen, the loopback benchmark's settings) producing and consuming the
#     same shapes;
#   - produce latency at fixed rates (32 MiB/s over 64 partitions, 10 MiB/s into one) and
#     end-to-end latency (produce, then consume, one
#     record at a time), with the Java client, in microseconds (tools/kafka/apps/LatencyBench.java;
#     Kafka's own tools print whole milliseconds), and Kafka's kafka-e2e-latency itself;
#   - fsync on every message (`flush.messages=1`): librdkafka sending one 1 KiB message per
#     request, beside `dd` appending 1 KiB blocks with O_DSYNC to a new file (the disk's own
#     rate of the same kind of write);
#   - 10 topics of 1,000 partitions: librdkafka producing to all of them, the broker's RSS idle
#     afterwards, and the time from launching the broker to serving every partition (a produce
#     to each acknowledged), after a clean stop and after SIGKILL.
#
# Every figure also has the broker's CPU time over the client's run, its peak and idle RSS and
# the bytes its data dir holds. Writes target/bench-data/vs-kafka.txt and vs-kafka-latency.txt
# (medians) and fsync-appends-storage.txt (the storage engine's fsync'd appends alone) for
# scripts/bench_report.py. `scripts/bench_vs_kafka.sh ROUNDS latency` runs the latency part
# alone. Called by scripts/bench.sh; takes about 13 minutes a round.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
# `all`, or `latency` for the latency part alone (target/bench-data/vs-kafka-latency.txt).
parts="${2:-all}"
mkdir -p target/bench-data
out=target/bench-data/vs-kafka.txt
runs=target/bench-data/vs-kafka-runs.txt
log=target/bench-data/vs-kafka-brokers.log
: > "$runs"
: > "$log"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
build_ferrolog_and_loadgen
scripts/kafka.sh install >/dev/null
{ read -r port; read -r controller_port; } < <(free_ports 2)
address="127.0.0.1:$port"
data="$PWD/target/bench-data/vs-kafka-data"
records=500000           # of 1 KiB per transfer: 0.5 GB
# Fixed rates for the latency runs, well below what the Java producer sustains beside either
# broker on two cores with linger.ms=0: at 100 MiB/s over 64 partitions (and 32 MiB/s into
# one) it fell behind its schedule, and both brokers' p99 was its backlog, hundreds of
# milliseconds. 32 MiB/s over 64 partitions, 10 MiB/s into one; five seconds each, the first
# warming up.
rate_many=32768
rate_one=10240
e2e_records=5000
fsync_records=5000
wide_topics=10           # of 1,000 partitions each (Kafka's controller takes at most 10,000
wide_partitions=1000     # records in one operation, so one topic of 10,000 is refused)

# Before each timed transfer: the dirty pages of the ones before are written back first. A
# transfer that starts with gigabytes of them is throttled by the kernel's write-back (past about
# 2.3 GB here, ../shared/notes/machine.md), which stalled single produces for hundreds of
# milliseconds, whichever the broker.
settle() { sync; }

# bench_common.sh's `load`, settled first.
settled_load() {
  settle
  load "$@"
}

# The figure NAME of the current broker, appended to the runs file; a value that is not a
# number (a tool that printed something else, a broker gone) stops the benchmark.
record() {
  if ! [[ "$2" =~ ^[0-9.eE+-]+$ ]]; then
    echo "figure ${broker}_$1: not a number: '$2'" >&2
    exit 1
  fi
  echo "${broker}_$1 $2" >> "$runs"
}

rss_kib() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; }

# `launch_broker`: starts the current broker on the data dir without waiting; sets `server`.
launch_broker() {
  if [ "$broker" = ferrolog ]; then
    "$ferrolog" serve --listen "$address" --log-dirs "$data" >>"$log" 2>&1 &
    server=$!
  else
    server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" scripts/kafka.sh launch "$data" "$port" "$controller_port")
  fi
}

start_broker() {
  if [ "$broker" = ferrolog ]; then
    launch_broker
    wait_for_port "$port"
  else
    server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" scripts/kafka.sh start "$data" "$port" "$controller_port")
  fi
}

# Whether the broker's process is gone (Kafka's JVM is not this script's child: once killed it
# may linger as a zombie until something reaps it).
gone() { ! kill -0 "$server" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$server/stat" 2>/dev/null)" = Z ]; }

# A clean stop (ferrolog: SIGINT, its shutdown; Kafka: SIGTERM, its controlled shutdown), waited
# for; one that takes over two minutes stops the benchmark rather than pass for clean.
stop_broker() {
  if [ "$broker" = ferrolog ]; then
    kill -INT "$server"
  else
    kill -TERM "$server"
  fi
  for _ in $(seq 1200); do
    if gone; then
      if [ "$broker" = ferrolog ]; then wait "$server" || true; fi
      return
    fi
    sleep 0.1
  done
  echo "$broker did not stop within two minutes" >&2
  kill -9 "$server"
  exit 1
}

kill_broker() {
  kill -9 "$server"
  until gone; do sleep 0.05; done
  if [ "$broker" = ferrolog ]; then wait "$server" || true; fi
}

topic() { # NAME PARTITIONS [CONFIG...]
  local name=$1 partitions=$2 configs=()
  shift 2
  for config in "$@"; do configs+=(--config "$config"); done
  scripts/kafka.sh run org.apache.kafka.tools.TopicCommand --bootstrap-server "$address" \
    --create --topic "$name" --partitions "$partitions" "${configs[@]}" >/dev/null
}

# `per_gigabyte NAME BYTES CPU_BEFORE`: the broker's CPU seconds per gigabyte since CPU_BEFORE.
per_gigabyte() {
  record "$1_broker_cpu" "$(python3 -c 'import sys; print((float(sys.argv[3]) - float(sys.argv[2])) / (float(sys.argv[1]) / 1e9))' \
    "$2" "$3" "$(broker_cpu)")"
}

# kafka-producer-perf-test, unthrottled: NAME TOPIC ACKS.
producer_perf() {
  local before line
  settle
  before=$(broker_cpu)
  line=$(scripts/kafka.sh bench org.apache.kafka.tools.ProducerPerformance --topic "$2" \
    --num-records "$records" --record-size 1024 --throughput -1 \
    --producer-props "bootstrap.servers=$address" "acks=$3" | tail -1)
  record "$1" "$(echo "$line" | awk -F', ' '{split($2, r, " "); print r[1] * 1024}')"
  per_gigabyte "$1" $((records * 1024)) "$before"
}

# kafka-consumer-perf-test: NAME TOPIC, the rate of its fetch phase (joining the group excluded).
consumer_perf() {
  local before line
  settle
  before=$(broker_cpu)
  line=$(scripts/kafka.sh bench org.apache.kafka.tools.ConsumerPerformance --topic "$2" \
    --num-records "$records" --bootstrap-server "$address" --timeout 60000 | tail -1)
  record "$1" "$(echo "$line" | awk -F', ' '{print $10 * 1024}')"
  per_gigabyte "$1" $((records * 1024)) "$before"
}

# LatencyBench: NAME MODE ARGS...; records the percentiles it prints.
latency() {
  local name=$1 mode=$2 result before
  shift 2
  settle
  before=$(broker_cpu)
  result=$(scripts/kafka.sh bench LatencyBench "$mode" "$address" "$@" 2>>"$log" | tail -1)
  echo "$result" | python3 -c '
import json, sys
name, broker = sys.argv[1], sys.argv[2]
result = json.load(sys.stdin)
for key in ("records_per_second", "p50_us", "p99_us", "p999_us", "max_us"):
    print("%s_%s_%s %s" % (broker, name, key, result[key]))' "$name" "$broker" >> "$runs"
  record "${name}_broker_cpu_s" "$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$before" "$(broker_cpu)")"
}

# Latency at fixed rates, acks=1 and acks=all, and end to end (acks=all), from an empty data
# dir, after a warm-up produce of 0.5 GB.
latencies() {
  rm -rf "$data"
  start_broker
  topic one 1
  topic many 64
  # Warmed first: Kafka's JIT compiles its produce path over its first seconds of load, and a
  # cold JVM broker answered the first latency run's sends in up to a second.
  topic warm 1
  scripts/kafka.sh bench org.apache.kafka.tools.ProducerPerformance --topic warm \
    --num-records "$records" --record-size 1024 --throughput -1 \
    --producer-props "bootstrap.servers=$address" acks=1 >/dev/null
  latency latency_1p_acks1 produce one $((rate_one * 5)) "$rate_one" 1 1024
  latency latency_64p_acks1 produce many $((rate_many * 5)) "$rate_many" 1 1024
  latency latency_1p_acksall produce one $((rate_one * 5)) "$rate_one" all 1024
  latency latency_64p_acksall produce many $((rate_many * 5)) "$rate_many" all 1024
  latency e2e e2e one "$e2e_records" all 1024
  local line
  settle
  line=$(scripts/kafka.sh bench org.apache.kafka.tools.EndToEndLatency --bootstrap-server "$address" \
    --topic one --num-records "$e2e_records" --producer-acks all --record-size 1024 2>>"$log" | grep 'Avg latency')
  record e2e_tool_avg_ms "$(echo "$line" | awk '{print $3}')"
  stop_broker
}

# The throughput and fsync rounds of one broker, from an empty data dir.
transfers() {
  rm -rf "$data"
  start_broker
  sleep 2
  record rss_idle_empty "$(rss_kib "$server" VmRSS)"
  topic one 1
  topic many 64
  topic synced 1 flush.messages=1
  producer_perf produce_java_1p_acks1 one 1
  producer_perf produce_java_64p_acks1 many 1
  producer_perf produce_java_1p_acksall one all
  producer_perf produce_java_64p_acksall many all
  # A first group, untimed: Kafka creates __consumer_offsets for it.
  scripts/kafka.sh run org.apache.kafka.tools.ConsumerPerformance --topic one --num-records 1 \
    --bootstrap-server "$address" --timeout 60000 >/dev/null
  consumer_perf consume_java_1p one
  consumer_perf consume_java_64p many
  settled_load "${broker}_produce_rdkafka_1p" "$address" --topic one --messages "$records" produce
  settled_load "${broker}_produce_rdkafka_64p" "$address" --topic many --messages "$records" produce
  settled_load "${broker}_consume_rdkafka_1p" "$address" --topic one --messages "$records" consume
  settled_load "${broker}_consume_rdkafka_64p" "$address" --topic many --messages "$records" consume --partitions 64
  record rss_peak "$(rss_kib "$server" VmHWM)"
  # One 1 KiB message per request (librdkafka pipelines them), each append fsynced, beside the
  # disk's own rate of 1 KiB appends each followed by a sync.
  rm -f target/bench-data/dsync.bin
  record dsync_appends_per_s "$(LC_ALL=C dd if=/dev/zero of=target/bench-data/dsync.bin bs=1k count="$fsync_records" oflag=dsync 2>&1 \
    | tail -1 | awk -v n="$fsync_records" -F', ' '{split($3, t, " "); print n / t[1]}')"
  rm -f target/bench-data/dsync.bin
  settled_load "${broker}_fsync_each" "$address" --topic synced --messages "$fsync_records" \
    --set linger.ms=0 --set batch.num.messages=1 produce
  sleep 3
  record rss_idle_loaded "$(rss_kib "$server" VmRSS)"
  stop_broker
  record disk_bytes "$(du -sb "$data" | cut -f1)"
  record disk_allocated_bytes "$(($(du -sk "$data" | cut -f1) * 1024))"
}

# `timed_start NAME`: launches the broker and records the seconds until every partition of the
# wide topics has acknowledged a produce.
timed_start() {
  local launched ready
  launched=$(date +%s.%N)
  launch_broker
  ready=$("$loadgen" --brokers "$address" ready --topics "$(seq -s, -f 'wide%g' 0 $((wide_topics - 1)))" \
    --partitions "$wide_partitions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["ready_unix_seconds"])')
  record "$1" "$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$launched" "$ready")"
}

# 10,000 partitions: create, produce to all, idle RSS, restart after a clean stop and a SIGKILL.
wide() {
  rm -rf "$data"
  start_broker
  local t before
  for t in $(seq 0 $((wide_topics - 1))); do topic "wide$t" "$wide_partitions"; done
  # Keyed messages, so librdkafka spreads them over every partition, about 100 to each. The
  # rate is the load generator's own, from its first acknowledged message to its last, summed
  # over the topics (its start and metadata fetch are outside it); the broker's CPU is counted
  # over every run.
  settle
  before=$(broker_cpu)
  local results
  results=$(for t in $(seq 0 $((wide_topics - 1))); do
      "$loadgen" --brokers "$address" --topic "wide$t" --messages $((wide_partitions * 100)) produce
    done)
  record wide_produce "$(echo "$results" | python3 -c '
import json, sys
runs = [json.loads(line) for line in sys.stdin]
print(sum(run["bytes"] for run in runs) / sum(run["seconds"] for run in runs))')"
  per_gigabyte wide_produce $((wide_topics * wide_partitions * 100 * 1024)) "$before"
  sleep 5
  record wide_rss_idle "$(rss_kib "$server" VmRSS)"
  stop_broker
  timed_start wide_start_clean
  sleep 2
  kill_broker
  timed_start wide_start_unclean
  stop_broker
}

# `run_rounds PART...`: each part, ROUNDS rounds, the brokers taking turns going first; the runs
# file's medians into OUT.
run_rounds() {
  : > "$runs"
  for round in $(seq "$rounds"); do
    order="ferrolog kafka"
    [ $((round % 2)) = 0 ] && order="kafka ferrolog"
    for broker in $order; do
      echo "== round $round: $broker: $*" >&2
      for part in "$@"; do "$part"; done
    done
  done
  : > "$out"
  medians_to "$out"
  cat "$out"
}

if [ "$parts" != latency ]; then
  cargo bench -q -p ferrolog-storage --bench fsync_appends > target/bench-data/fsync-appends-storage.txt
  run_rounds transfers wide
fi
out=target/bench-data/vs-kafka-latency.txt
runs=target/bench-data/vs-kafka-latency-runs.txt
run_rounds latencies
rm -rf "$data" "target/bench-data/kafka-$port.log"
