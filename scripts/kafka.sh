#!/usr/bin/env bash
# Apache Kafka 4.4.0 as a test peer, beside ferrolog.
#
#   scripts/kafka.sh install                 resolve Kafka's jars (tools/kafka/pom.xml) into
#                                            target/kafka/libs (cached, so a second run is
#                                            quick) and compile tools/kafka/apps against them
#   scripts/kafka.sh start DATA_DIR PORT [CONTROLLER_PORT]
#                                            format DATA_DIR (first time only) and start a
#                                            single-node KRaft broker (combined broker and
#                                            controller) on 127.0.0.1:PORT, its controller on
#                                            CONTROLLER_PORT (default PORT+1); waits until it
#                                            answers, prints its PID
#   scripts/kafka.sh launch DATA_DIR PORT [CONTROLLER_PORT]
#                                            the same, but prints the PID at once without
#                                            waiting (a benchmark timing the start polls itself)
#   scripts/kafka.sh stop PID                stop that broker (SIGTERM, then SIGKILL after 30 s)
#   scripts/kafka.sh run CLASS ARGS...       run one of Kafka's main classes (its tools) or
#                                            of tools/kafka/apps
#   scripts/kafka.sh bench CLASS ARGS...     the same with the JVM's full compilers and a
#                                            1 GiB heap, for a benchmark's client
#   scripts/kafka.sh mirror-maker CONFIG     run MirrorMaker 2 (dedicated mode) with CONFIG
#   scripts/kafka.sh classpath               print the classpath
#
# The broker's output goes to DATA_DIR/../kafka-<PORT>.log, its configuration to
# DATA_DIR.properties; FERROLOG_KAFKA_EXTRA adds lines to it, FERROLOG_KAFKA_JVM_OPTS sets
# the broker's heap and collector. Java 17 or newer is needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
libs="${FERROLOG_KAFKA_LIBS:-$root/target/kafka/libs}"
# Small Java programs of the tests (tools/kafka/apps), compiled against Kafka's jars.
apps="$root/target/kafka/apps"
# MirrorMaker 2, from Kafka 4.3.1 (tools/kafka/mirror/pom.xml: 4.4.0's is not on Maven Central).
mirror_libs="$root/target/kafka/mirror-libs"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

install() {
  resolve
  mkdir -p "$apps"
  "${JAVA_HOME:+$JAVA_HOME/bin/}javac" -nowarn -d "$apps" -cp "$libs/*" "$root"/tools/kafka/apps/*.java
}

resolve() {
  resolve_into "$root/tools/kafka/pom.xml" "$libs"
  resolve_into "$root/tools/kafka/mirror/pom.xml" "$mirror_libs"
}

# Copies the dependencies of POM into DIR, unless DIR is complete and newer than POM.
resolve_into() {
  local pom="$1" dir="$2"
  if [ -f "$dir/.complete" ] && [ "$dir/.complete" -nt "$pom" ]; then
    return
  fi
  echo "== resolving $(basename "$(dirname "$pom")")/$(basename "$pom") into $dir" >&2
  rm -rf "$dir"
  mvn -q -B -Dstyle.color=never -f "$pom" -Dmaven.repo.local="$root/target/m2" \
    dependency:copy-dependencies -DoutputDirectory="$dir" >&2
  touch "$dir/.complete"
}

mirror_maker() {
  exec "$java" -Xmx512m -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="${FERROLOG_KAFKA_LOG_CONFIG:-$root/tools/kafka/log4j2-tools.properties}" \
    -cp "$mirror_libs/*" org.apache.kafka.connect.mirror.MirrorMaker "$@"
}

run() {
  local class="$1"
  shift
  exec "$java" -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$root/tools/kafka/log4j2-tools.properties" \
    -cp "$libs/*:$apps" "$class" "$@"
}

# A benchmark's client: the JVM as a tuned application runs it (both JIT tiers, G1).
bench() {
  local class="$1"
  shift
  exec "$java" -Xmx1G -Xms1G -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$root/tools/kafka/log4j2-tools.properties" \
    -cp "$libs/*:$apps" "$class" "$@"
}

# Writes the configuration, formats DATA_DIR the first time and starts the broker in the
# background; sets `pid` and `log`.
launch() {
  local data="$1" port="$2"
  local controller="${3:-$((port + 1))}"
  mkdir -p "$data"
  data="$(cd "$data" && pwd)"
  local config="$data.properties"
  log="$data/../kafka-$port.log"
  cat >"$config" <<PROPS
process.roles=broker,controller
node.id=${FERROLOG_KAFKA_NODE_ID:-0}
controller.quorum.voters=${FERROLOG_KAFKA_NODE_ID:-0}@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=${FERROLOG_KAFKA_OFFSETS_PARTITIONS:-50}
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
  if [ -n "${FERROLOG_KAFKA_EXTRA:-}" ]; then
    printf '%s\n' "$FERROLOG_KAFKA_EXTRA" >>"$config"
  fi
  if [ ! -f "$data/meta.properties" ]; then
    "$java" -Xmx256m -Dlog4j2.configurationFile="$root/tools/kafka/log4j2-tools.properties" \
      -cp "$libs/*" kafka.tools.StorageTool format \
      -t "${FERROLOG_KAFKA_CLUSTER_ID:-ferrolog-peer-cluster0}" -c "$config" >>"$log" 2>&1 \
      || { cat "$log" >&2; exit 1; }
  fi
  # FERROLOG_KAFKA_JVM_OPTS: the broker's heap and collector (the benchmark passes those of
  # Kafka's own kafka-server-start.sh); by default a small heap for tests.
  # shellcheck disable=SC2086
  nohup "$java" ${FERROLOG_KAFKA_JVM_OPTS:--Xmx1g -Xms256m -XX:+UseSerialGC} -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$root/tools/kafka/log4j2-broker.properties" \
    -cp "$libs/*" kafka.Kafka "$config" >>"$log" 2>&1 </dev/null &
  pid=$!
}

start() {
  local port="$2" pid log
  launch "$@"
  # Serving once the broker answers ApiVersions through Kafka's own tool.
  for _ in $(seq 1 120); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "Kafka exited while starting; its log ($log):" >&2
      tail -50 "$log" >&2
      exit 1
    fi
    if "$java" -Xmx128m -XX:TieredStopAtLevel=1 \
      -Dlog4j2.configurationFile="$root/tools/kafka/log4j2-tools.properties" -cp "$libs/*" \
      org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "127.0.0.1:$port" \
      >/dev/null 2>&1; then
      echo "$pid"
      return
    fi
    sleep 0.5
  done
  echo "Kafka did not answer on 127.0.0.1:$port within a minute; its log ($log):" >&2
  tail -50 "$log" >&2
  kill -9 "$pid" 2>/dev/null || true
  exit 1
}

stop() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

command="${1:-}"
shift || true
case "$command" in
  install) install ;;
  start) resolve; start "$@" ;;
  launch) resolve; launch "$@"; echo "$pid" ;;
  stop) stop "$@" ;;
  run) run "$@" ;;
  bench) bench "$@" ;;
  mirror-maker) mirror_maker "$@" ;;
  classpath) echo "$libs/*" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
