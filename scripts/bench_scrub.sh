#!/usr/bin/env bash
# The scrubber's cost and rate, on `ferrolog serve` with a 2 GB topic of 1 KiB records
# (kafka-producer-perf-test, one partition, 1 GiB segments by default so the scrubber has
# sealed ones: `log.segment.bytes` is 128 MiB here):
#   1. the disk's own O_DIRECT read rate over the topic's sealed segments (dd iflag=direct,
#      1 MiB blocks, the page cache dropped first);
#   2. one unthrottled scrub pass over the same segments: its rate, and the segments' pages in
#      the page cache after it (fincore; the cache dropped first), beside the same after a
#      buffered read of them (cat);
#   3. produce (1,000,000 records of 1 KiB, acks=1) and consume (the same from the 2 GB topic)
#      with the scrubber paused (rate 0) and at its default rate (4 MiB/s) mid-pass, alternated
#      over three rounds, medians.
# Kafka 4.4 has no scrubber to compare with. Needs root (to drop the page cache) and fincore
# (util-linux). Writes target/bench-data/scrub.txt; takes about ten minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/scrub.txt
runs=target/bench-data/scrub-runs.txt
: > "$out"
: > "$runs"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
cargo build --release -q -p ferrolog
scripts/kafka.sh install >/dev/null
{ read -r port; read -r metrics_port; } < <(free_ports 2)
address="127.0.0.1:$port"
data=target/bench-data/scrub-data
records=2000000
measured=1000000
segment_bytes=$((128 * 1024 * 1024))

# `start RATE`: the broker, its scrubber at RATE bytes a second, a new pass from the start.
start() {
  rm -f "$data/ferrolog-scrub-checkpoint"
  "$ferrolog" serve --listen "$address" --log-dirs "$data" \
    --override log.initial.task.delay.ms=0 \
    --override "log.segment.bytes=$segment_bytes" \
    --override "ferrolog.scrub.bytes.per.second=$1" \
    --override "metrics.listener=http://127.0.0.1:$metrics_port" \
    >>target/bench-data/scrub-serve.log 2>&1 &
  server=$!
  wait_for_port "$port"
}

stop() {
  kill -INT "$server"
  wait "$server" || true
}

# The value of metric NAME (0 when not yet reported).
metric() {
  curl -s "http://127.0.0.1:$metrics_port/metrics" | awk -v name="$1" '$1 == name {v = $2} END {print v + 0}'
}

now() { date +%s.%N; }

# The sealed segments of the filled topic (all but the newest).
sealed() { ls "$data"/filled-0/*.log | sort | head -n -1; }

# Pages of the sealed segments in the page cache.
cached_pages() { fincore --raw --noheadings --output PAGES $(sealed) | awk '{s += $1} END {print s + 0}'; }

drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches; }

rm -rf "$data"
start 0
scripts/kafka.sh bench org.apache.kafka.tools.ProducerPerformance --topic filled \
  --num-records "$records" --record-size 1024 --throughput -1 \
  --producer-props "bootstrap.servers=$address" acks=1 >/dev/null
stop
bytes=$(cat $(sealed) | wc -c)
echo "sealed_bytes $bytes" >> "$out"

# 1. The disk's O_DIRECT read rate.
drop_cache
began=$(now)
for file in $(sealed); do dd if="$file" of=/dev/null bs=1M iflag=direct status=none; done
echo "dd_direct_bytes_per_s $(python3 -c "import sys; print(int($bytes / ($(now) - $began)))")" >> "$out"

# 2. One unthrottled scrub pass, and the page cache after it.
drop_cache
echo "pages_cached_before $(cached_pages)" >> "$out"
start 1000000000000
began=$(now)
until [ "$(metric ferrolog_log_scrub_passes_total)" -ge 1 ]; do sleep 0.05; done
elapsed=$(python3 -c "print($(now) - $began)")
scrubbed=$(metric ferrolog_log_scrub_bytes_total)
echo "scrub_bytes_per_s $(python3 -c "print(int($scrubbed / $elapsed))")" >> "$out"
echo "pages_cached_after_scrub $(cached_pages)" >> "$out"
stop
cat $(sealed) > /dev/null
echo "pages_cached_after_cat $(cached_pages)" >> "$out"
echo "pages_of_sealed $(( (bytes + 4095) / 4096 ))" >> "$out"

# 3. Produce and consume beside a scrubber paused and at its default rate.
for round in 1 2 3; do
  for rate in 0 4194304; do
    start "$rate"
    line=$(scripts/kafka.sh bench org.apache.kafka.tools.ProducerPerformance --topic "p$round-$rate" \
      --num-records "$measured" --record-size 1024 --throughput -1 \
      --producer-props "bootstrap.servers=$address" acks=1 | tail -1)
    echo "produce_$rate $(echo "$line" | awk -F', ' '{split($2, r, " "); print r[1] * 1024}')" >> "$runs"
    line=$(scripts/kafka.sh bench org.apache.kafka.tools.ConsumerPerformance --topic filled \
      --num-records "$measured" --bootstrap-server "$address" --timeout 60000 | tail -1)
    echo "consume_$rate $(echo "$line" | awk -F', ' '{print $10 * 1024}')" >> "$runs"
    echo "scrubbed_during_$rate $(metric ferrolog_log_scrub_bytes_total)" >> "$runs"
    stop
  done
done
for figure in $(awk '{print $1}' "$runs" | awk '!seen[$0]++'); do
  echo "$figure $(awk -v f="$figure" '$1 == f {print $2}' "$runs" | median)" >> "$out"
done
rm -rf "$data"
cat "$out"
