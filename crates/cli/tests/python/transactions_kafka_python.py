"""kafka-python transactions against one broker, printing a transcript, one line each, that
must be the same from Kafka and from ferrolog: a commit of records and a group's offset, an abort
of both, a producer fenced by a newer instance of its transactional id, a consume-transform-
produce step with the consumer's position in the transaction, then what read_committed and
read_uncommitted consumers read and the group's committed offset. Errors are printed by class.

Usage: transactions_kafka_python.py PORT NAME (topics NAME-in and NAME-out, group NAME-group)"""

import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

port, name = sys.argv[1:3]
BOOTSTRAP = "127.0.0.1:%s" % port
INPUT, OUTPUT, GROUP = name + "-in", name + "-out", name + "-group"


def say(line):
    print(line)
    sys.stdout.flush()


def producer(suffix):
    made = KafkaProducer(bootstrap_servers=BOOTSTRAP,
                         transactional_id="%s-%s" % (name, suffix))
    made.init_transactions()
    return made


def offset(position):
    return {TopicPartition(INPUT, 0): OffsetAndMetadata(position, "", -1)}


def committed():
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=GROUP,
                             enable_auto_commit=False)
    found = consumer.committed(TopicPartition(INPUT, 0))
    consumer.close()
    return found


def read(isolation, expected):
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, isolation_level=isolation,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(OUTPUT, 0)])
    values, deadline = [], time.time() + 20
    while len(values) < expected and time.time() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            values.extend(record.value.decode() for record in records)
    for records in consumer.poll(timeout_ms=1000).values():
        values.extend(record.value.decode() for record in records)
    consumer.close()
    return values


admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic(INPUT, 1, 1), NewTopic(OUTPUT, 1, 1)])
admin.close()
plain = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for i in range(3):
    plain.send(INPUT, ("in-%d" % i).encode(), partition=0)
plain.flush()

main = producer("main")
main.begin_transaction()
for value in ["commit-1", "commit-2", "commit-3"]:
    main.send(OUTPUT, value.encode(), partition=0)
main.send_offsets_to_transaction(offset(1), GROUP)
main.commit_transaction()
say("committed")

main.begin_transaction()
for value in ["abort-1", "abort-2"]:
    main.send(OUTPUT, value.encode(), partition=0)
main.flush()
main.send_offsets_to_transaction(offset(3), GROUP)
main.abort_transaction()
say("aborted")
say("offset after abort %s" % committed())

main.begin_transaction()
main.send(OUTPUT, b"fenced-1", partition=0)
main.flush()
successor = producer("main")
try:
    main.commit_transaction()
    say("zombie committed")
except Exception as error:  # the class is what is compared
    say("zombie commit refused: %s" % type(error).__name__)
main.close(timeout=0)

# Consume-transform-produce: the successor copies the input from the committed position.
consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=GROUP, enable_auto_commit=False,
                         isolation_level="read_committed", auto_offset_reset="earliest")
consumer.assign([TopicPartition(INPUT, 0)])
copied, deadline = 0, time.time() + 20
while copied < 2 and time.time() < deadline:
    for records in consumer.poll(timeout_ms=200).values():
        for record in records:
            successor.begin_transaction()
            successor.send(OUTPUT, record.value.upper(), partition=0)
            successor.send_offsets_to_transaction(offset(record.offset + 1), GROUP)
            successor.commit_transaction()
            copied += 1
consumer.close()
say("transformed %d" % copied)
successor.close()

say("read_committed %s" % read("read_committed", 5))
say("read_uncommitted %s" % sorted(read("read_uncommitted", 8)))
say("offset at the end %s" % committed())
