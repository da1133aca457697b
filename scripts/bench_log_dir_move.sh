#!/usr/bin/env bash
# Moving a partition between data directories, `ferrolog serve` against Apache Kafka 4.4: each
# from empty data dirs `a` and `b` on the same file system, Kafka's producer-perf-test writes
# 512 MiB (100 KiB records) to a one-partition topic, then Kafka's kafka-reassign-partitions
# moves it to the other directory (unthrottled). The move is timed on the file system, the same
# way for both: from the moment its `-future` directory appears to the moment the partition's
# plain directory is in the target and the future one gone. Three rounds, the brokers taking
# turns. Beside them, in the same run: `dd` writing 256 MiB in 1 MiB blocks (buffered, and
# with `conv=fdatasync`), and the storage bench `log_dir_move` (the LogManager alone: the move's
# rate, and another partition's appends while it moves). Writes
# target/bench-data/log-dir-move.txt (medians, bytes per second) and log-dir-move-storage.txt
# for scripts/bench_report.py. Called by scripts/bench.sh; takes about 4 minutes.
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

# `move_partition NAME`: fills the topic, moves it, and appends the rate to the runs file.
move_partition() {
  local name=$1 from to size started finished
  scripts/kafka.sh run org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" \
    --create --topic moving --partitions 1 >/dev/null
  scripts/kafka.sh run org.apache.kafka.tools.ProducerPerformance --topic moving \
    --num-records "$records" --record-size 102400 --throughput -1 --producer-props \
    "bootstrap.servers=127.0.0.1:$port" acks=1 batch.size=1048576 linger.ms=5 \
    max.request.size=1048576 >/dev/null
  if [ -d "$data/a/moving-0" ]; then from=a to=b; else from=b to=a; fi
  size=$(cat "$data/$from"/moving-0/*.log | wc -c)
  printf '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[0],"log_dirs":["%s"]}]}' \
    "$data/$to" > "$data/plan.json"
  scripts/kafka.sh run org.apache.kafka.tools.reassign.ReassignPartitionsCommand \
    --bootstrap-server "127.0.0.1:$port" --execute --reassignment-json-file "$data/plan.json" \
    >/dev/null &
  local tool=$!
  until compgen -G "$data/$to/moving-0.*-future" >/dev/null || [ -d "$data/$to/moving-0" ]; do
    sleep 0.005
  done
  started=$(date +%s.%N)
  until [ -d "$data/$to/moving-0" ] && ! compgen -G "$data/$to/moving-0.*-future" >/dev/null; do
    sleep 0.005
  done
  finished=$(date +%s.%N)
  wait "$tool"
  echo "$name $(python3 -c "import sys; print(int(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2])))" \
    "$size" "$started" "$finished")" >> "$runs"
  echo "${name}_bytes $size" >> "$runs"
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
