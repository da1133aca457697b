#!/usr/bin/env bash
# ferrolog at another revision against the working tree, on this machine, in the same run:
# `scripts/bench_ab.sh REV [ROUNDS]` builds `ferrolog` at REV (in a worktree and a target dir
# of its own under target/ab: sharing target/ would let cargo take one revision's build of a
# workspace crate for the other's) and here, then runs librdkafka (tools/loadgen, as
# scripts/bench_vs_kafka.sh runs it) producing and then consuming 500,000 1 KiB records, into one
# partition and into 64, against each broker from an empty data dir, the two taking turns,
# ROUNDS rounds (default 3). Prints the medians: each transfer's rate, and the client's and the
# broker's CPU seconds per gigabyte. To tell a change's own cost from the machine's.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="$1"
rounds="${2:-3}"
source scripts/bench_common.sh
build_ferrolog_and_loadgen
mkdir -p target/ab
cp "$ferrolog" target/ab/ferrolog-new
worktree=target/ab/worktree
git worktree remove --force "$worktree" 2>/dev/null || true
git worktree add --detach -q "$worktree" "$rev"
(cd "$worktree" && CARGO_TARGET_DIR="$OLDPWD/target/ab/target" cargo build --release -q -p ferrolog)
cp target/ab/target/release/ferrolog target/ab/ferrolog-old
git worktree remove --force "$worktree"
runs=target/ab/runs.txt
: > "$runs"
records=500000
port=$(free_ports 1)
address=127.0.0.1:$port
for round in $(seq "$rounds"); do
  order="old new"
  [ $((round % 2)) -eq 0 ] && order="new old"
  for which in $order; do
    data=target/bench-data/ab-$which
    rm -rf "$data"
    mkdir -p "$data"
    "target/ab/ferrolog-$which" serve --listen "$address" --log-dirs "$data" >>target/ab/serve.log 2>&1 &
    server=$!
    wait_for_port "$port"
    for topic in one:1 many:64; do
      scripts/kafka.sh run org.apache.kafka.tools.TopicCommand --bootstrap-server "$address" \
        --create --topic "${topic%:*}" --partitions "${topic#*:}" >/dev/null
    done
    sync; load "${which}_produce_1p" "$address" --topic one --messages "$records" produce
    sync; load "${which}_produce_64p" "$address" --topic many --messages "$records" produce
    sync; load "${which}_consume_1p" "$address" --topic one --messages "$records" consume
    sync; load "${which}_consume_64p" "$address" --topic many --messages "$records" consume --partitions 64
    kill "$server"
    wait "$server" || true
    rm -rf "$data"
  done
done
medians=target/ab/medians.txt
: > "$medians"
medians_to "$medians"
cat "$medians"
