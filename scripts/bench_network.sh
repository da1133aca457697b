#!/usr/bin/env bash
# The loopback benchmark: a real Kafka client (librdkafka, through tools/loadgen) producing and
# consuming 1 KiB messages against `ferrolog serve`, beside the loopback TCP bandwidth (iperf3)
# and a buffered write of the same volume, all measured in this run. Writes
# target/bench-data/network.txt for scripts/bench_report.py. Called by scripts/bench.sh; takes
# about 2 minutes after the first build of the load generator (~1 minute).
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
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())[sys.argv[1]])' "$1"; }

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
  for _ in $(seq 50); do
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
    sleep 0.1
  done
  echo "ferrolog serve did not start" >&2
  exit 1
}
stop() { kill -INT "$server"; wait "$server" || true; }

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
  echo "produce $("$loadgen" --brokers "127.0.0.1:$port" --topic bench --messages $messages produce | field bytes_per_second)" \
    >> target/bench-data/network-runs.txt
  # Consumes the warm-up message too, so every one of the produced messages is counted.
  echo "consume_copy $("$loadgen" --brokers "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume | field bytes_per_second)" \
    >> target/bench-data/network-runs.txt
  stop
  serve sendfile
  echo "consume_sendfile $("$loadgen" --brokers "127.0.0.1:$port" --topic bench --messages $((messages + 1)) consume | field bytes_per_second)" \
    >> target/bench-data/network-runs.txt
  stop
done
rm -rf "$data"
for figure in dd produce consume_copy consume_sendfile; do
  echo "$figure $(awk -v f="$figure" '$1 == f {print $2}' target/bench-data/network-runs.txt | median)" >> "$out"
done
cat "$out"
