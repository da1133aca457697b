#!/usr/bin/env bash
# The loopback benchmark: real Kafka clients (librdkafka, and rskafka for produce, through
# tools/loadgen) producing and consuming 1 KiB messages against `ferrolog serve`, against
# Apache Kafka 4.4 (scripts/kafka.sh, with Kafka's own JVM settings) and against a stand-in
# broker that does next to nothing, beside the loopback TCP bandwidth (iperf3) and a
# buffered write of the same volume, all measured in this run. Each transfer also records the
# CPU time the client and the broker spent per gigabyte, since client and broker share the
# machine's cores. Writes target/bench-data/network.txt for scripts/bench_report.py. Called by
# scripts/bench.sh; takes about 3 minutes after the first build of the load generator (~1
# minute).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/network.txt
: > "$out"

if ! command -v iperf3 >/dev/null; then
  sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_if_needed apt-get install -y -q iperf3 >/dev/null 2>&1 \
    || { sudo_if_needed apt-get update -q >/dev/null && sudo_if_needed apt-get install -y -q iperf3 >/dev/null; }
fi
cargo build --release -q -p ferrolog
cargo build --release -q --manifest-path tools/loadgen/Cargo.toml --target-dir target/loadgen
ferrolog=target/release/ferrolog
loadgen=target/loadgen/release/ferrolog-loadgen
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
messages=1000000
data=target/bench-data/network-data
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
clock_ticks=$(getconf CLK_TCK)

# Loopback TCP, one stream, 5 s; three runs.
for run in 1 2 3; do
  iperf3 -s -B 127.0.0.1 -p "$port" -1 >/dev/null 2>&1 &
  sleep 0.5
  iperf3 -c 127.0.0.1 -p "$port" -t 5 -J \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)'
  wait
done | median | sed 's/^/iperf3 /' >> "$out"

serve() { # transfer mode
  "$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" \
    --override ferrolog.fetch.transfer="$1" >target/bench-data/network-serve.log 2>&1 &
  server=$!
  wait_for_port
}
wait_for_port() {
  for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
    sleep 0.1
  done
  echo "the broker on port $port did not start" >&2
  exit 1
}
stop() { kill -INT "$server"; wait "$server" || true; }
# CPU seconds the broker has used so far (user + system, all threads).
broker_cpu() { awk -v hz="$clock_ticks" '{print ($14 + $15) / hz}' "/proc/$server/stat"; }
# One transfer, `load NAME LOADGEN-ARGS...`: appends to the runs file the rate (NAME), and the
# client's CPU seconds per gigabyte in the timed part (NAME_client_cpu) and the broker's over the
# whole client run, connecting included (NAME_broker_cpu).
load() {
  local name=$1 before result
  shift
  before=$(broker_cpu)
  result=$("$loadgen" --brokers "127.0.0.1:$port" "$@")
  python3 -c '
import json, sys
name, before, after, result = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
gigabytes = result["bytes"] / 1e9
print(name, result["bytes_per_second"])
print(name + "_client_cpu", result["cpu_seconds"] / gigabytes)
print(name + "_broker_cpu", (after - before) / gigabytes)' "$name" "$before" "$(broker_cpu)" "$result" \
    >> target/bench-data/network-runs.txt
}

# Five rounds. Each starts from an empty data dir, so the produced gigabyte is written into
# page-cache memory freed moments before, as is the dd reference beside it (this VM's fresh
# memory is slow to touch the first time; see docs/benchmarks.md).
: > target/bench-data/network-runs.txt
for run in 1 2 3 4 5; do
  rm -rf "$data"
  dd if=/dev/zero of=target/bench-data/dd-net.bin bs=1M count=1000 2>&1 | tail -1 \
    | awk -F', ' '{split($3, t, " "); print "dd " 1048576000 / t[1]}' >> target/bench-data/network-runs.txt
  rm -f target/bench-data/dd-net.bin
  serve copy
  load produce --topic bench --messages $messages produce
  # Consumes the warm-up message too, so every one of the produced messages is counted.
  load consume_copy --topic bench --messages $((messages + 1)) consume
  stop
  serve sendfile
  load consume_sendfile --topic bench --messages $((messages + 1)) consume
  stop
  # A second client of another design (no local queue; whole batches of 1,000 records, four
  # requests outstanding) producing the same volume, into the memory the first gigabyte freed.
  rm -rf "$data"
  serve copy
  load produce_rskafka --client rskafka --topic bench --messages $messages produce
  stop
  # The same clients against a stand-in broker that keeps nothing and answers fetches from
  # memory (`ferrolog-loadgen sink`): what they reach when the broker costs next to nothing.
  rm -rf "$data"
  "$loadgen" sink --listen "127.0.0.1:$port" >>target/bench-data/network-serve.log 2>&1 &
  server=$!
  wait_for_port
  load sink_produce --topic bench --messages $messages produce
  load sink_consume --topic bench --messages $((messages + 1)) consume
  load sink_produce_rskafka --client rskafka --topic bench --messages $messages produce
  # SIGTERM: a background job of a script starts with SIGINT ignored, and the sink, unlike
  # `ferrolog serve`, installs no handler of its own.
  kill "$server"
  wait "$server" || true
  # Apache Kafka 4.4 on the same disk, started with the JVM settings of Kafka's own
  # kafka-server-start.sh (1 GiB heap, G1), the same clients against it.
  rm -rf "$data"
  server=$(FERROLOG_KAFKA_JVM_OPTS="-Xmx1G -Xms1G -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent" \
    scripts/kafka.sh start "$data/kafka" "$port")
  load kafka_produce --topic bench --messages $messages produce
  load kafka_consume --topic bench --messages $((messages + 1)) consume
  scripts/kafka.sh stop "$server"
done
rm -rf "$data"
for figure in $(awk '{print $1}' target/bench-data/network-runs.txt | awk '!seen[$0]++'); do
  echo "$figure $(awk -v f="$figure" '$1 == f {print $2}' target/bench-data/network-runs.txt | median)" >> "$out"
done
cat "$out"
