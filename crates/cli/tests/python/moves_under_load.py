"""confluent-kafka clients busy while the test moves every partition between data directories:
an idempotent producer (acks=all) writes to a plain topic of three partitions and to a
compacted topic of two (small segments, so the cleaner works on it during the moves), and a
consumer reads both from the start as they grow.

Prints "ready" once the topics exist, then produces until a line arrives on stdin. Then it
checks, and exits non-zero on the first failure:
- every produce was acknowledged (no OUT_OF_ORDER_SEQUENCE_NUMBER or other error);
- the consumer saw the plain topic's offsets one after another (no gap), and the compacted
  topic's always rising;
- read again from the start, the plain topic holds every acknowledged record exactly once, at
  the offset it was acknowledged at, and nothing else; the compacted topic holds, for each key,
  its last acknowledged value at that value's offset, and only acknowledged records.
The last line says how many records were acknowledged and how many compacted ones are left.

Usage: moves_under_load.py BROKER_PORT
"""

import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = f"127.0.0.1:{sys.argv[1]}"
PLAIN, PLAIN_PARTITIONS = "busy", 3
COMPACTED, COMPACTED_PARTITIONS = "compacted", 2
KEYS = 150


def fail(message):
    print(f"FAIL {message}", flush=True)
    os._exit(1)


admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
futures = admin.create_topics([
    NewTopic(PLAIN, PLAIN_PARTITIONS, 1),
    NewTopic(COMPACTED, COMPACTED_PARTITIONS, 1, config={
        "cleanup.policy": "compact",
        "internal.segment.bytes": "65536",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0",
    }),
])
for future in futures.values():
    future.result(30)

acked = {}  # (topic, partition) -> {offset: value}
failures = []
lock = threading.Lock()


def delivered(error, message):
    with lock:
        if error is not None:
            failures.append(str(error))
        else:
            acked.setdefault((message.topic(), message.partition()), {})[message.offset()] = (
                message.key(), message.value())


seen = {}  # (topic, partition) -> last offset read
gaps = []
stop_reading = threading.Event()


def read_along():
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "along",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(PLAIN, p, OFFSET_BEGINNING) for p in range(PLAIN_PARTITIONS)]
                    + [TopicPartition(COMPACTED, p, OFFSET_BEGINNING)
                       for p in range(COMPACTED_PARTITIONS)])
    while not stop_reading.is_set():
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            gaps.append(f"consumer error {message.error()}")
            continue
        key = (message.topic(), message.partition())
        last = seen.get(key)
        offset = message.offset()
        if last is not None:
            if message.topic() == PLAIN and offset != last + 1:
                gaps.append(f"{key}: offset {offset} after {last}")
            if offset <= last:
                gaps.append(f"{key}: offset {offset} after {last}")
        seen[key] = offset
    consumer.close()


reader = threading.Thread(target=read_along)
reader.start()

producer = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True, "acks": "all",
                     "linger.ms": 5, "max.in.flight.requests.per.connection": 5,
                     "batch.size": 16000})
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
print("ready", flush=True)
sequence = 0
while not stop.is_set():
    for partition in range(PLAIN_PARTITIONS):
        producer.produce(PLAIN, value=f"busy-{partition}-{sequence}".encode() + b"." * 200,
                         partition=partition, on_delivery=delivered)
    producer.produce(COMPACTED, key=f"k{sequence % KEYS}".encode(),
                     value=f"v{sequence}".encode() + b"." * 100,
                     partition=sequence % COMPACTED_PARTITIONS, on_delivery=delivered)
    sequence += 1
    if sequence % 20 == 0:
        # About 1,000 rounds (0.7 MB) a second: busy, and still checkable at the end.
        producer.poll(0)
        time.sleep(0.02)
print(f"stopping after {sequence} rounds", file=sys.stderr, flush=True)
if producer.flush(60) != 0:
    fail("messages left unacknowledged")
if failures:
    fail(f"{len(failures)} produce errors, the first: {failures[0]}")

# The reader catches up with everything acknowledged, then stops.
deadline = time.time() + 60
while time.time() < deadline:
    with lock:
        behind = [key for key, records in acked.items() if seen.get(key, -1) < max(records)]
    if not behind:
        break
    time.sleep(0.2)
stop_reading.set()
reader.join()
if gaps:
    fail(f"{len(gaps)} gaps seen while reading along, the first: {gaps[0]}")

print("read along; reading everything again", file=sys.stderr, flush=True)
# Everything again, from the start.
consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "again",
                     "enable.auto.commit": False})
consumer.assign([TopicPartition(PLAIN, p, OFFSET_BEGINNING) for p in range(PLAIN_PARTITIONS)]
                + [TopicPartition(COMPACTED, p, OFFSET_BEGINNING)
                   for p in range(COMPACTED_PARTITIONS)])
stored = {}
quiet_since = time.time()
while time.time() - quiet_since < 3:
    message = consumer.poll(0.5)
    if message is None:
        continue
    if message.error():
        fail(f"reading again: {message.error()}")
    quiet_since = time.time()
    records = stored.setdefault((message.topic(), message.partition()), {})
    if message.offset() in records:
        fail(f"{message.topic()}-{message.partition()} offset {message.offset()} read twice")
    records[message.offset()] = (message.key(), message.value())
consumer.close()

for partition in range(PLAIN_PARTITIONS):
    key = (PLAIN, partition)
    if stored.get(key, {}) != acked.get(key, {}):
        missing = len(set(acked.get(key, {})) - set(stored.get(key, {})))
        extra = len(set(stored.get(key, {})) - set(acked.get(key, {})))
        fail(f"{PLAIN}-{partition}: {missing} acknowledged records missing, {extra} never acknowledged")
compacted_records = 0
for partition in range(COMPACTED_PARTITIONS):
    key = (COMPACTED, partition)
    acknowledged = acked.get(key, {})
    latest = {}
    for offset, (record_key, value) in sorted(acknowledged.items()):
        latest[record_key] = (offset, value)
    for offset, record in stored.get(key, {}).items():
        if acknowledged.get(offset) != record:
            fail(f"{COMPACTED}-{partition} offset {offset} holds a record never acknowledged there")
    for record_key, (offset, value) in latest.items():
        if stored.get(key, {}).get(offset) != (record_key, value):
            fail(f"{COMPACTED}-{partition}: the last value of {record_key} (offset {offset}) is gone")
    compacted_records += len(acknowledged)

plain_records = sum(len(acked.get((PLAIN, p), {})) for p in range(PLAIN_PARTITIONS))
kept = sum(len(stored.get((COMPACTED, p), {})) for p in range(COMPACTED_PARTITIONS))
print(f"OK {plain_records} plain and {compacted_records} compacted records acknowledged, "
      f"{kept} compacted records kept", flush=True)
