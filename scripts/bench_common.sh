# What the loopback benchmarks (scripts/bench_network.sh, scripts/bench_tls.sh) share; sourced,
# not run, from the repository's root. The sourcing script sets `runs` (the file each
# transfer's figures are appended to) and, before each transfer, `server` (the broker's process
# id).

ferrolog=target/release/ferrolog
loadgen=target/loadgen/release/ferrolog-loadgen

# `need_package PACKAGE FILE`: installs the Debian package unless FILE is there.
need_package() {
  [ -e "$2" ] && return
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get install -y -q "$1" >/dev/null 2>&1 \
    || { "${sudo[@]}" apt-get update -q >/dev/null && "${sudo[@]}" apt-get install -y -q "$1" >/dev/null; }
}

# Builds `ferrolog` and the load generator (librdkafka, built from source, takes OpenSSL's
# headers for its TLS).
build_ferrolog_and_loadgen() {
  need_package libssl-dev /usr/include/openssl/ssl.h
  cargo build --release -q -p ferrolog
  cargo build --release -q --manifest-path tools/loadgen/Cargo.toml --target-dir target/loadgen
}

clock_ticks=$(getconf CLK_TCK)

# Apache Kafka 4.4 is started with the JVM settings of its own kafka-server-start.sh (1 GiB
# heap, G1).
kafka_jvm_opts="-Xmx1G -Xms1G -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent"

# The median of the numbers on standard input.
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# `free_ports N`: N TCP ports free on 127.0.0.1 at once, one per line.
free_ports() {
  python3 -c '
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in sockets))' "$1"
}

# Waits until something accepts connections on 127.0.0.1:PORT (ten seconds at most).
wait_for_port() {
  for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
    sleep 0.1
  done
  echo "nothing started on port $1" >&2
  exit 1
}

# CPU seconds the broker has used so far (user + system, all threads).
broker_cpu() { awk -v hz="$clock_ticks" '{print ($14 + $15) / hz}' "/proc/$server/stat"; }

# One transfer, `load NAME ADDRESS LOADGEN-ARGS...`, the load generator run against the broker
# at ADDRESS: appends to the runs file the rate (NAME), and the client's CPU seconds per gigabyte
# in the timed part (NAME_client_cpu) and the broker's over the whole client run, connecting
# included (NAME_broker_cpu).
load() {
  local name=$1 address=$2 before result
  shift 2
  before=$(broker_cpu)
  result=$("$loadgen" --brokers "$address" "$@")
  python3 -c '
import json, sys
name, before, after, result = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
gigabytes = result["bytes"] / 1e9
print(name, result["bytes_per_second"])
print(name + "_client_cpu", result["cpu_seconds"] / gigabytes)
print(name + "_broker_cpu", (after - before) / gigabytes)' "$name" "$before" "$(broker_cpu)" "$result" \
    >> "$runs"
}

# Writes to OUT the median of each figure in the runs file, in the order first seen.
medians_to() {
  local figure
  for figure in $(awk '{print $1}' "$runs" | awk '!seen[$0]++'); do
    echo "$figure $(awk -v f="$figure" '$1 == f {print $2}' "$runs" | median)" >> "$1"
  done
}
