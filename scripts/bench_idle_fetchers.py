"""Broker CPU per produce while consumers long-poll partitions nobody writes to.

Each run starts a broker on an empty data directory (`ferrolog serve` of the binary given, or
Apache Kafka 4.4 through scripts/kafka.sh with the JVM settings of Kafka's own start script for
the target `kafka`), creates a topic `busy` (1 partition) and a topic `idle` (32 partitions),
lets 32 librdkafka consumers (confluent-kafka) long-poll one `idle` partition each
(`fetch.wait.max.ms=500`), then produces 20,000 records of 100 bytes to `busy`, one request at
a time, and reads the broker's CPU time from /proc around the produces. Runs alternate between
the targets, ROUNDS times; with --out, `NAME_us_per_produce` and `NAME_produces_per_s` lines
(NAME: `ferrolog` for a binary, `kafka`) go to that file as well.

    target/test-venv/bin/python scripts/bench_idle_fetchers.py ROUNDS [--out FILE] TARGET...
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

IDLE_PARTITIONS = 32
RECORDS = 20_000
PORT = 19_092


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


KAFKA_JVM_OPTS = (
    "-Xmx1G -Xms1G -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
    "-XX:+ExplicitGCInvokesConcurrent"
)
SCRIPTS = os.path.dirname(os.path.abspath(__file__))


class Broker:
    """A broker process on PORT: `ferrolog serve` of a binary, or Kafka 4.4."""

    def __init__(self, target):
        self.data = tempfile.mkdtemp()
        bootstrap = f"127.0.0.1:{PORT}"
        if target == "kafka":
            self.kafka = True
            started = subprocess.run(
                [f"{SCRIPTS}/kafka.sh", "start", f"{self.data}/kafka", str(PORT)],
                env={**os.environ, "FERROLOG_KAFKA_JVM_OPTS": KAFKA_JVM_OPTS},
                check=True,
                capture_output=True,
                text=True,
            )
            self.pid = int(started.stdout.split()[-1])
        else:
            self.kafka = False
            self.process = subprocess.Popen(
                [target, "serve", "--listen", bootstrap, "--log-dirs", self.data],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.pid = self.process.pid

    def stop(self):
        if self.kafka:
            subprocess.run([f"{SCRIPTS}/kafka.sh", "stop", str(self.pid)], check=True)
        else:
            self.process.terminate()
            self.process.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def run(target):
    bootstrap = f"127.0.0.1:{PORT}"
    broker = Broker(target)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        deadline = time.time() + 30
        while True:
            try:
                admin.list_topics(timeout=1)
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        created = admin.create_topics(
            [NewTopic("busy", 1, 1), NewTopic("idle", IDLE_PARTITIONS, 1)]
        )
        for future in created.values():
            future.result()
        stop = threading.Event()

        def consume(partition):
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": f"idle-{partition}",
                    "fetch.wait.max.ms": 500,
                    "enable.auto.commit": False,
                    "log_level": 0,
                }
            )
            consumer.assign([TopicPartition("idle", partition, 0)])
            while not stop.is_set():
                consumer.poll(0.2)
            consumer.close()

        consumers = [
            threading.Thread(target=consume, args=(partition,))
            for partition in range(IDLE_PARTITIONS)
        ]
        for consumer in consumers:
            consumer.start()
        time.sleep(5)  # every consumer connected and waiting in a fetch
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 0,
                "acks": 1,
                "max.in.flight.requests.per.connection": 1,
                "log_level": 0,
            }
        )
        before, started = cpu_seconds(broker.pid), time.time()
        for _ in range(RECORDS):
            producer.produce("busy", b"x" * 100)
            producer.flush()
        used, elapsed = cpu_seconds(broker.pid) - before, time.time() - started
        stop.set()
        for consumer in consumers:
            consumer.join()
        return used, elapsed
    finally:
        broker.stop()


def main():
    args = sys.argv[1:]
    rounds = int(args.pop(0))
    out = None
    if args[0] == "--out":
        out = args[1]
        args = args[2:]
    results = {target: [] for target in args}
    for _ in range(rounds):
        for target in args:
            results[target].append(run(target))
    lines = []
    for target, runs in results.items():
        cpu = statistics.median(used for used, _ in runs)
        rate = statistics.median(RECORDS / elapsed for _, elapsed in runs)
        print(
            f"{target}: broker CPU {1e6 * cpu / RECORDS:.0f} us per produce, "
            f"{rate:,.0f} produces/s (medians of {rounds}; "
            f"CPU s per run {[round(used, 2) for used, _ in runs]})"
        )
        name = "kafka" if target == "kafka" else "ferrolog"
        lines.append(f"{name}_us_per_produce {1e6 * cpu / RECORDS:.1f}")
        lines.append(f"{name}_produces_per_s {rate:.0f}")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
