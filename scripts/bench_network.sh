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

# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
need_package iperf3 /usr/bin/iperf3
build_ferrolog_and_loadgen
runs=target/bench-data/network-runs.txt
port=$(free_ports 1)
messages=1000000
data=target/bench-data/network-data

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
  wait_for_port "$port"
}
stop() { kill -INT "$server"; wait "$server" || true; }

# Five rounds. Each starts from an empty data dir, so the produced gigabyte is written into
# page-cache memory freed moments before, as is the dd reference beside it (this VM's fresh
# memory is slow to touch the first time; see docs/benchmarks.md).
: > "$runs"
for run in 1 2 3 4 5; do
  rm -rf "$data"
  dd if=/dev/zero of=target/bench-data/dd-net.bin bs=1M count=1000 2>&1 | tail -1 \
    | awk -F', ' '{split($3, t, " "); print "dd " 1048576000 / t[1]}' >> "$runs"
  rm -f target/bench-data/dd-net.bin
  serve copy
  load produce "127.0.0.1:$port" --topic bench --messages $messages produce
  # Consumes the warm-up message too, so every one of the produced messages is counted.
  load consume_copy "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume
  stop
  serve sendfile
  load consume_sendfile "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume
  stop
  # A second client of another design (no local queue; whole batches of 1,000 records, four
  # requests outstanding) producing the same volume, into the memory the first gigabyte freed.
  rm -rf "$data"
  serve copy
  load produce_rskafka "127.0.0.1:$port" --client rskafka --topic bench --messages $messages produce
  stop
  # The same clients against a stand-in broker that keeps nothing and answers fetches from
  # memory (`ferrolog-loadgen sink`): what they reach when the broker costs next to nothing.
  rm -rf "$data"
  "$loadgen" sink --listen "127.0.0.1:$port" >>target/bench-data/network-serve.log 2>&1 &
  server=$!
  wait_for_port "$port"
  load sink_produce "127.0.0.1:$port" --topic bench --messages $messages produce
  load sink_consume "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume
  load sink_produce_rskafka "127.0.0.1:$port" --client rskafka --topic bench --messages $messages produce
  # SIGTERM: a background job of a script starts with SIGINT ignored, and the sink, unlike
  # `ferrolog serve`, installs no handler of its own.
  kill "$server"
  wait "$server" || true
  # Apache Kafka 4.4 on the same disk, the same clients against it.
  rm -rf "$data"
  server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" scripts/kafka.sh start "$data/kafka" "$port")
  load kafka_produce "127.0.0.1:$port" --topic bench --messages $messages produce
  load kafka_consume "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume
  scripts/kafka.sh stop "$server"
done
rm -rf "$data"
medians_to "$out"
cat "$out"
