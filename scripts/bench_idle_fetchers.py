"""Broker CPU per produce while consumers long-poll partitions nobody writes to.

Each run starts `ferrolog serve` (the binary given) on an empty data directory, creates a topic
`busy` (1 partition) and a topic `idle` (32 partitions), lets 32 librdkafka consumers
(confluent-kafka) long-poll one `idle` partition each (`fetch.wait.max.ms=500`), then produces
20,000 records of 100 bytes to `busy`, one request at a time, and reads the broker's CPU time
from /proc around the produces. Runs alternate between the binaries given, ROUNDS times.

    target/test-venv/bin/python scripts/bench_idle_fetchers.py ROUNDS BINARY [BINARY...]
"""

import os
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


def run(binary):
    data = tempfile.mkdtemp()
    bootstrap = f"127.0.0.1:{PORT}"
    server = subprocess.Popen(
        [binary, "serve", "--listen", bootstrap, "--log-dirs", data],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
        before, started = cpu_seconds(server.pid), time.time()
        for _ in range(RECORDS):
            producer.produce("busy", b"x" * 100)
            producer.flush()
        used, elapsed = cpu_seconds(server.pid) - before, time.time() - started
        stop.set()
        for consumer in consumers:
            consumer.join()
        return used, elapsed
    finally:
        server.terminate()
        server.wait()


def main():
    rounds, binaries = int(sys.argv[1]), sys.argv[2:]
    results = {binary: [] for binary in binaries}
    for _ in range(rounds):
        for binary in binaries:
            results[binary].append(run(binary))
    for binary, runs in results.items():
        cpu = statistics.median(used for used, _ in runs)
        rate = statistics.median(RECORDS / elapsed for _, elapsed in runs)
        print(
            f"{binary}: broker CPU {1e6 * cpu / RECORDS:.0f} us per produce, "
            f"{rate:,.0f} produces/s (medians of {rounds}; "
            f"CPU s per run {[round(used, 2) for used, _ in runs]})"
        )


if __name__ == "__main__":
    main()
