#!/usr/bin/env bash
# Runs ferrolog's benchmarks beside the machine's own limits measured in the same run, and
# writes docs/benchmarks.md. Takes about an hour on a 2-core machine (scripts/bench_vs_kafka.sh,
# against Kafka 4.4, about 40 minutes of it).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
baseline="target/bench-data/baseline.txt"
: > "$baseline"

# The file system's buffered sequential write bandwidth, the way the append bench writes: a new
# 256 MiB file each run, no fsync. Two warm-up runs, then five measured; the median is used.
# With `reserved`, the file's blocks are first reserved with `fallocate --keep-size`, as the log
# reserves them ahead of its appends: the same kind of write's own ceiling.
dd_rate() { # block size, count, [reserved]
  local rates=()
  for run in 1 2 3 4 5 6 7; do
    rm -f target/bench-data/dd.bin
    if [ "${3:-}" = reserved ]; then
      touch target/bench-data/dd.bin
      fallocate --keep-size --length 256MiB target/bench-data/dd.bin
    fi
    local line
    line=$(dd if=/dev/zero of=target/bench-data/dd.bin bs="$1" count="$2" conv=notrunc 2>&1 | tail -1)
    [ "$run" -gt 2 ] && rates+=("$(echo "$line" | awk -F', ' '{split($3, t, " "); print 268435456 / t[1]}')")
  done
  rm -f target/bench-data/dd.bin
  printf '%s\n' "${rates[@]}" | sort -g | sed -n 3p
}
echo "dd_1M $(dd_rate 1M 256)" >> "$baseline"
echo "dd_16k $(dd_rate 16k 16384)" >> "$baseline"
echo "dd_1M_reserved $(dd_rate 1M 256 reserved)" >> "$baseline"
echo "dd_16k_reserved $(dd_rate 16k 16384 reserved)" >> "$baseline"
# Page-cache read bandwidth of a cached 256 MiB file.
dd if=/dev/zero of=target/bench-data/cached.bin bs=1M count=256 status=none
cat target/bench-data/cached.bin > /dev/null
read_rates=()
for run in 1 2 3 4 5; do
  line=$(dd if=target/bench-data/cached.bin of=/dev/null bs=1M 2>&1 | tail -1)
  read_rates+=("$(echo "$line" | awk -F', ' '{split($3, t, " "); print 268435456 / t[1]}')")
done
rm -f target/bench-data/cached.bin
echo "dd_read $(printf '%s\n' "${read_rates[@]}" | sort -g | sed -n 3p)" >> "$baseline"

cargo bench -p ferrolog-storage --bench storage
cargo bench -p ferrolog-storage --bench manager | tee target/bench-data/manager.txt
cargo bench -p ferrolog-storage --bench cleaner | tee target/bench-data/cleaner.txt
cargo bench -p ferrolog-broker --bench authorize
scripts/bench_network.sh
scripts/bench_tls.sh
scripts/bench_transactions.sh
scripts/bench_groups.sh
scripts/bench_share.sh
scripts/bench_log_dir_move.sh
scripts/bench_vs_kafka.sh
# Produce while 32 consumers long-poll idle partitions, ferrolog and Kafka 4.4 alternating.
venv="${FERROLOG_VENV:-$PWD/target/test-venv}"
if ! "$venv/bin/python" -c "import confluent_kafka" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/test-requirements.txt
fi
"$venv/bin/python" scripts/bench_idle_fetchers.py 3 --out target/bench-data/idle_fetchers.txt \
  target/release/ferrolog kafka

python3 scripts/bench_report.py "$baseline" > docs/benchmarks.md
echo "wrote docs/benchmarks.md"
