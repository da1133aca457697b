#!/usr/bin/env bash
# Moving a partition between data directories, `ferrolog serve` against Apache Kafka 4.4: each
# from empty data dirs `a` and `b` on the same file system, Kafka's producer-perf-test writes
# 512 MiB (100 KiB records) to a one-partition topic, then Kafka's kafka-reassign-partitions
# moves it to the other directory (unthrottled) with the page cache dropped first (as root), and
# back again while another producer-perf-test writes to an eight-partition topic as fast as it
# can. A move is timed on the file system, the same way for both: from the moment its `-future`
# directory appears to the moment the partition's plain directory is in the target and the
# future one gone; the other topic's rate is its log files' growth meanwhile, against the same
# over the 3 seconds before. Three rounds, the brokers taking turns. Beside them, in the same
# run: `dd` writing 256 MiB in 1 MiB blocks (buffered, and with `conv=fdatasync`) and reading
# it back with O_DIRECT, and the storage bench `log_dir_move` (the LogManager alone: the move's
# rate, and another partition's appends while it moves). Writes
# target/bench-data/log-dir-move.txt (medians, bytes per second) and log-dir-move-storage.txt
# for scripts/bench_report.py. Called by scripts/bench.sh; takes about 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/log-dir-move.txt
: > "$out"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
cargo build --release -q -p ferrolog
scripts/kafka.sh install >/dev/null
runs=target/bench-data/log-dir-move-runs.txt
{ read -r port; read -r controller_port; } < <(free_ports 2)
data="$PWD/target/bench-data/log-dir-move-data"
records=5243 # of 100 KiB: 512 MiB

# Drops the page cache (after writing back what is dirty), so that a move reads the log from
# the disk; needs root. Records whether it could.
drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then
    echo 3 > /proc/sys/vm/drop_caches
    echo "cold_cache 1" >> "$runs"
  else
    echo "cold_cache 0" >> "$runs"
  fi
}

# `log_bytes PATH-PATTERN`: bytes in the `.log` files under the data dirs whose path matches
# (a broker may rename or delete some while they are counted).
log_bytes() {
  { find "$data" -ignore_readdir_race -path "$1" -name '*.log' -printf '%s\n' 2>/dev/null || true; } \
    | awk '{s += $1} END {print s + 0}'
}

# Bytes in the `others` topic's log files, both directories together.
others_bytes() { log_bytes '*/others-*'; }

# `timed_move NAME TO`: moves the partition to directory TO and appends its rate to the runs
# file (NAME), and the rate at which the `others` topic grew meanwhile (NAME_others).
timed_move() {
  local name=$1 to=$2 size started finished others_before others_after tool
  size=$(log_bytes '*/moving-0/*')
  printf '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[0],"log_dirs":["%s"]}]}' \
    "$data/$to" > "$data/plan.json"
  scripts/kafka.sh run org.apache.kafka.tools.reassign.ReassignPartitionsCommand \
    --bootstrap-server "127.0.0.1:$port" --execute --reassignment-json-file "$data/plan.json" \
    >/dev/null &
  tool=$!
  until compgen -G "$data/$to/moving-0.*-future" >/dev/null || [ -d "$data/$to/moving-0" ]; do
    sleep 0.005
  done
  started=$(date +%s.%N)
  others_before=$(others_bytes)
  until [ -d "$data/$to/moving-0" ] && ! compgen -G "$data/$to/moving-0.*-future" >/dev/null; do
    sleep 0.005
  done
  finished=$(date +%s.%N)
  others_after=$(others_bytes)
  wait "$tool"
  python3 -c '
import sys
name, size, started, finished, before, after = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
seconds = finished - started
print(name, size / seconds)
print(name + "_others", (after - before) / seconds)' \
    "$name" "$size" "$started" "$finished" "$others_before" "$others_after" >> "$runs"
}

# `move_partition NAME`: fills the topic, then moves it to the other directory with the page
# cache dropped (NAME), and back again, also from a cold cache, while a producer writes to the
# eight partitions of another topic as fast as it can (NAME_loaded; NAME_loaded_others is that
# producer's rate during the move, NAME_others_alone the same producer's over the 3 seconds
# just before).
move_partition() {
  local name=$1 from to producer before after
  scripts/kafka.sh run org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" \
    --create --topic moving --partitions 1 >/dev/null
  scripts/kafka.sh run org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" \
    --create --topic others --partitions 8 >/dev/null
  scripts/kafka.sh run org.apache.kafka.tools.ProducerPerformance --topic moving \
    --num-records "$records" --record-size 102400 --throughput -1 --producer-props \
    "bootstrap.servers=127.0.0.1:$port" acks=1 batch.size=1048576 linger.ms=5 \
    max.request.size=1048576 >/dev/null
  if [ -d "$data/a/moving-0" ]; then from=a to=b; else from=b to=a; fi
  echo "${name}_bytes $(log_bytes '*/moving-0/*')" >> "$runs"
  drop_caches
  timed_move "$name" "$to"

  scripts/kafka.sh bench org.apache.kafka.tools.ProducerPerformance --topic others \
    --num-records 1000000000 --record-size 1024 --throughput -1 --producer-props \
    "bootstrap.servers=127.0.0.1:$port" acks=1 linger.ms=5 >/dev/null &
  producer=$!
  local waited=0
  until [ "$(others_bytes)" -gt 100000000 ]; do
    if ! kill -0 "$producer" 2>/dev/null || [ "$waited" -ge 600 ]; then
      echo "the producer on the other topic did not get going against $name" >&2
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  drop_caches
  before=$(others_bytes)
  sleep 3
  after=$(others_bytes)
  echo "${name}_others_alone $(( (after - before) / 3 ))" >> "$runs"
  timed_move "${name}_loaded" "$from"
  kill "$producer" 2>/dev/null || true
  wait "$producer" || true
}

: > "$runs"
for run in 1 2 3; do
  for sync in none fdatasync; do
    rm -f target/bench-data/dd.bin
    conv=notrunc
    [ "$sync" = fdatasync ] && conv=notrunc,fdatasync
    line=$(dd if=/dev/zero of=target/bench-data/dd.bin bs=1M count=256 conv=$conv 2>&1 | tail -1)
    echo "dd_1M_$sync $(echo "$line" | awk -F', ' '{split($3, t, " "); print 268435456 / t[1]}')" >> "$runs"
  done
  # The disk's sequential read, past the page cache (0 where the file system refuses O_DIRECT).
  if line=$(dd if=target/bench-data/dd.bin of=/dev/null bs=1M iflag=direct 2>&1 | tail -1) \
    && [[ "$line" == *copied* ]]; then
    echo "dd_read_1M_direct $(echo "$line" | awk -F', ' '{split($3, t, " "); print 268435456 / t[1]}')" >> "$runs"
  else
    echo "dd_read_1M_direct 0" >> "$runs"
  fi
  rm -f target/bench-data/dd.bin
done
cargo bench -q -p ferrolog-storage --bench log_dir_move | tee target/bench-data/log-dir-move-storage.txt
for run in 1 2 3; do
  rm -rf "$data" && mkdir -p "$data/a" "$data/b"
  "$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data/a,$data/b" \
    >target/bench-data/log-dir-move-serve.log 2>&1 &
  server=$!
  wait_for_port "$port"
  move_partition ferrolog
  kill -INT "$server"
  wait "$server" || true

  rm -rf "$data" && mkdir -p "$data/a" "$data/b"
  server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" FERROLOG_KAFKA_EXTRA="log.dirs=$data/a,$data/b" \
    scripts/kafka.sh start "$data/a" "$port" "$controller_port")
  move_partition kafka
  scripts/kafka.sh stop "$server"
done
rm -rf "$data"
medians_to "$out"
cat "$out"
