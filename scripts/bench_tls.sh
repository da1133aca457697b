#!/usr/bin/env bash
# The TLS benchmark: librdkafka (tools/loadgen) producing and consuming 1 KiB messages over TLS
# and over plaintext, against `ferrolog serve` (a PLAINTEXT and an SSL listener), against the
# stand-in broker serving TLS as ferrolog does (what the client reaches over TLS when the broker
# costs nothing but TLS), and against Apache Kafka 4.4 with the same two listeners, all in the
# same rounds. Beside them, the machine's own AES-GCM rate on one core (`openssl speed`), and the
# protocol and cipher suite each broker agrees with OpenSSL. Writes target/bench-data/tls.txt and
# tls-cipher.txt for scripts/bench_report.py. Called by scripts/bench.sh; takes about 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-data
out=target/bench-data/tls.txt
: > "$out"
# shellcheck source=scripts/bench_common.sh
source scripts/bench_common.sh
build_ferrolog_and_loadgen
runs=target/bench-data/tls-runs.txt
{ read -r port; read -r tls_port; read -r controller_port; } < <(free_ports 3)
messages=1000000
data=target/bench-data/tls-data

# A CA and the broker's certificate for 127.0.0.1, RSA 2048 as an operator would make them; the
# same PEM key store for ferrolog, the stand-in and Kafka.
certs=target/bench-data/tls-certs
rm -rf "$certs"
mkdir -p "$certs"
(
  cd "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bench CA" \
    -keyout ca.key -out ca.pem 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout broker.key -out broker.csr 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > broker.ext
  openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile broker.ext -out broker.crt 2>/dev/null
  cat broker.key broker.crt > broker.pem
)
certs=$(cd "$certs" && pwd)
tls_client=(--set security.protocol=ssl --set "ssl.ca.location=$certs/ca.pem")

# AES-256-GCM on one core, 16 KiB at a time (a TLS record's size): bytes per second.
openssl speed -evp aes-256-gcm -bytes 16384 -seconds 3 2>/dev/null | tail -1 \
  | awk '{sub(/k$/, "", $2); print "aes_256_gcm_one_core " $2 * 1000}' >> "$out"

# `negotiated NAME`: the protocol and suite OpenSSL's client agrees on the TLS port.
negotiated() {
  echo "$1 $(openssl s_client -connect "127.0.0.1:$tls_port" -CAfile "$certs/ca.pem" -brief \
    </dev/null 2>&1 | sed -n 's/^\(Protocol version\|Ciphersuite\): //p' | paste -sd ' ')" \
    >> target/bench-data/tls-cipher.txt
}
: > target/bench-data/tls-cipher.txt

# `transfers PREFIX`: a gigabyte produced and consumed over each listener, in the round's order.
transfers() {
  local modes=(plain tls) mode
  [ $((run % 2)) = 0 ] && modes=(tls plain)
  for mode in "${modes[@]}"; do
    if [ "$mode" = tls ]; then
      load "$1_tls_produce" "127.0.0.1:$tls_port" "${tls_client[@]}" --topic tls --messages $messages produce
    else
      load "$1_plain_produce" "127.0.0.1:$port" --topic plain --messages $messages produce
    fi
  done
  # Consumes the warm-up message too, so every one of the produced messages is counted.
  for mode in "${modes[@]}"; do
    if [ "$mode" = tls ]; then
      load "$1_tls_consume" "127.0.0.1:$tls_port" "${tls_client[@]}" --topic tls --messages $((messages + 1)) consume
    else
      load "$1_plain_consume" "127.0.0.1:$port" --topic plain --messages $((messages + 1)) consume
    fi
  done
}

# Five rounds, each from an empty data dir; plaintext and TLS take turns going first.
: > "$runs"
for run in 1 2 3 4 5; do
  rm -rf "$data"
  "$ferrolog" serve --listen "127.0.0.1:$port" --log-dirs "$data" \
    --override "listeners=PLAINTEXT://127.0.0.1:$port,SSL://127.0.0.1:$tls_port" \
    --override ssl.keystore.type=PEM --override "ssl.keystore.location=$certs/broker.pem" \
    >target/bench-data/tls-serve.log 2>&1 &
  server=$!
  wait_for_port "$tls_port"
  [ "$run" = 1 ] && negotiated ferrolog
  transfers ferrolog
  kill -INT "$server"
  wait "$server" || true

  # The stand-in, one process per transfer kind (SIGTERM: it installs no handler of its own).
  for mode in plain tls; do
    if [ "$mode" = tls ]; then
      "$loadgen" sink --listen "127.0.0.1:$tls_port" --tls-pem "$certs/broker.pem" >>target/bench-data/tls-serve.log 2>&1 &
      server=$!
      wait_for_port "$tls_port"
      load sink_tls_produce "127.0.0.1:$tls_port" "${tls_client[@]}" --topic tls --messages $messages produce
      load sink_tls_consume "127.0.0.1:$tls_port" "${tls_client[@]}" --topic tls --messages $((messages + 1)) consume
    else
      "$loadgen" sink --listen "127.0.0.1:$port" >>target/bench-data/tls-serve.log 2>&1 &
      server=$!
      wait_for_port "$port"
      load sink_plain_produce "127.0.0.1:$port" --topic plain --messages $messages produce
      load sink_plain_consume "127.0.0.1:$port" --topic plain --messages $((messages + 1)) consume
    fi
    kill "$server"
    wait "$server" || true
  done

  rm -rf "$data"
  server=$(FERROLOG_KAFKA_JVM_OPTS="$kafka_jvm_opts" FERROLOG_KAFKA_EXTRA="\
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port,SSL://127.0.0.1:$tls_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SSL://127.0.0.1:$tls_port
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL
ssl.keystore.type=PEM
ssl.keystore.location=$certs/broker.pem" \
    scripts/kafka.sh start "$data/kafka" "$port" "$controller_port")
  [ "$run" = 1 ] && negotiated kafka
  transfers kafka
  scripts/kafka.sh stop "$server"
done
rm -rf "$data"
medians_to "$out"
cat "$out" target/bench-data/tls-cipher.txt
