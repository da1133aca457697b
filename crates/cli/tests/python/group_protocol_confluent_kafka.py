"""A confluent-kafka (librdkafka) member of a Kafka 4 consumer group (group.protocol=consumer,
KIP-848: the broker assigns), for the churn tests that run the same scenario on ferrolog and
Kafka.

Usage: group_protocol_confluent_kafka.py BOOTSTRAP TOPIC GROUP ASSIGNOR INSTANCE

ASSIGNOR names the server assignor (group.remote.assignor); INSTANCE is the group.instance.id,
or "-" for none. Prints "R value" for each record, flushed, then commits those offsets
synchronously; commits again before giving partitions up. Runs until SIGTERM, then closes
(leaving the group).
"""

import signal
import sys

from confluent_kafka import Consumer, KafkaException, TopicPartition

BOOTSTRAP, TOPIC, GROUP, ASSIGNOR, INSTANCE = sys.argv[1:6]
running = True


def stop(_signum, _frame):
    global running
    running = False


def main():
    signal.signal(signal.SIGTERM, stop)
    settings = {"bootstrap.servers": BOOTSTRAP, "group.id": GROUP,
                "group.protocol": "consumer", "group.remote.assignor": ASSIGNOR,
                "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    if INSTANCE != "-":
        settings["group.instance.id"] = INSTANCE
    consumer = Consumer(settings)
    processed = {}

    def commit(owned=None):
        offsets = [TopicPartition(TOPIC, p, o) for p, o in processed.items()
                   if owned is None or p in owned]
        processed.clear()
        if offsets:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as error:
                # Those records are processed again by the partitions' next owner.
                print("commit: %s" % error, file=sys.stderr)

    def revoked(_consumer, partitions):
        commit({tp.partition for tp in partitions})

    consumer.subscribe([TOPIC], on_revoke=revoked)
    while running:
        records = consumer.consume(num_messages=500, timeout=0.2)
        for record in records:
            if record.error():
                print("consume: %s" % record.error(), file=sys.stderr)
                continue
            sys.stdout.write("R %s\n" % record.value().decode())
            processed[record.partition()] = record.offset() + 1
        sys.stdout.flush()
        commit()
    commit()
    consumer.close()


main()
