"""confluent-kafka (librdkafka) transactions against one broker, as librdkafka's own
transactional tests exercise them. Prints a transcript, one JSON value per line, that must be
the same from Kafka and from ferrolog:

- commit: three records of OUTPUT and an offset of GROUP in one transaction, committed;
- abort: two records and another offset, aborted;
- fencing: a second producer with the same transactional.id takes over while the first is in a
  transaction; the first's commit fails as fenced and its record is aborted;
- timeout: a transaction left open past its transaction.timeout.ms is aborted by the
  coordinator (the broker checks every 500 ms), and its producer's commit fails;
- consume-transform-produce: a read_committed consumer in GROUP reads INPUT (five plain
  records), and each record goes, upper-cased, to OUTPUT in a transaction with the consumer's
  position;

then read_committed and read_uncommitted consumers read OUTPUT from the start, and GROUP's
committed offsets are read. Offsets of OUTPUT are not printed: Kafka writes a transaction's
markers after answering EndTxn, so where they land among later records varies from run to run.

Usage: transactions_confluent_kafka.py PORT NAME (topics NAME-in and NAME-out, group NAME-group,
transactional ids NAME-...)"""

import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

port, name = sys.argv[1:3]
BOOTSTRAP = "127.0.0.1:%s" % port
INPUT, OUTPUT, GROUP = name + "-in", name + "-out", name + "-group"


def say(*values):
    print(json.dumps(values))
    sys.stdout.flush()


def error_name(exception):
    error = exception.args[0]
    return {
        "name": error.name(),
        "fatal": error.fatal(),
        "abortable": error.txn_requires_abort(),
    }


def transactional(suffix, **extra):
    config = {
        "bootstrap.servers": BOOTSTRAP,
        "transactional.id": "%s-%s" % (name, suffix),
        "linger.ms": 0,
    }
    config.update(extra)
    producer = Producer(config)
    producer.init_transactions(30)
    return producer


def consumer(group, isolation):
    return Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": group,
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })



def read_all(isolation, expected):
    """Every value of OUTPUT readable at `isolation`, waiting up to 20 s for `expected`."""
    reader = consumer(name + "-reader-" + isolation, isolation)
    reader.assign([TopicPartition(OUTPUT, 0, 0)])
    values, deadline = [], time.time() + 20
    while len(values) < expected and time.time() < deadline:
        message = reader.poll(0.2)
        if message is not None and not message.error():
            values.append(message.value().decode())
    # Nothing more arrives.
    end = time.time() + 1
    while time.time() < end:
        message = reader.poll(0.2)
        if message is not None and not message.error():
            values.append(message.value().decode())
    reader.close()
    return values


admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
for future in admin.create_topics([NewTopic(INPUT, 1, 1), NewTopic(OUTPUT, 1, 1)]).values():
    future.result(30)
plain = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 0})
for i in range(5):
    plain.produce(INPUT, ("in-%d" % i).encode(), partition=0)
assert plain.flush(30) == 0

# The group's metadata for offsets sent outside a live group: a consumer that joined it.
group_consumer = consumer(GROUP, "read_committed")
metadata = group_consumer.consumer_group_metadata()

# Commit: records and an offset together.
producer = transactional("main")
producer.begin_transaction()
for value in ["commit-1", "commit-2", "commit-3"]:
    producer.produce(OUTPUT, value.encode(), partition=0)
producer.send_offsets_to_transaction([TopicPartition(INPUT, 0, 2)], metadata, 30)
producer.commit_transaction(30)
say("committed")

# Abort: neither the records nor the offset stay.
producer.begin_transaction()
for value in ["abort-1", "abort-2"]:
    producer.produce(OUTPUT, value.encode(), partition=0)
# Written before the abort (which would otherwise drop them unsent).
producer.flush(30)
producer.send_offsets_to_transaction([TopicPartition(INPUT, 0, 4)], metadata, 30)
producer.abort_transaction(30)
say("aborted")
say("offset after abort", group_consumer.committed([TopicPartition(INPUT, 0)], 30)[0].offset)

# Fencing: a newer instance of the same transactional id.
producer.begin_transaction()
producer.produce(OUTPUT, b"fenced-1", partition=0)
producer.flush(30)
successor = transactional("main")
try:
    producer.commit_transaction(30)
    say("zombie committed")
except KafkaException as error:
    say("zombie commit refused", error_name(error))
successor.begin_transaction()
successor.produce(OUTPUT, b"successor-1", partition=0)
successor.commit_transaction(30)
say("successor committed")

# Timeout: the coordinator aborts a transaction open past its timeout.
slow = transactional("slow", **{"transaction.timeout.ms": 1000})
slow.begin_transaction()
slow.produce(OUTPUT, b"timed-out-1", partition=0)
slow.flush(30)
time.sleep(4)
try:
    slow.commit_transaction(30)
    say("timed-out transaction committed")
except KafkaException as error:
    say("timed-out commit refused", error_name(error))

# Consume-transform-produce, with exactly-once positions.
worker = transactional("worker")
group_consumer.assign([TopicPartition(INPUT, 0, 2)])
transformed = 0
deadline = time.time() + 30
while transformed < 3 and time.time() < deadline:
    message = group_consumer.poll(0.5)
    if message is None or message.error():
        continue
    worker.begin_transaction()
    worker.produce(OUTPUT, message.value().decode().upper().encode(), partition=0)
    worker.send_offsets_to_transaction(
        [TopicPartition(INPUT, 0, message.offset() + 1)], metadata, 30)
    worker.commit_transaction(30)
    transformed += 1
say("transformed", transformed)
say("offset after transform", group_consumer.committed([TopicPartition(INPUT, 0)], 30)[0].offset)
group_consumer.close()

committed = read_all("read_committed", 7)
say("read_committed", committed)
say("read_uncommitted", sorted(read_all("read_uncommitted", 11)))
