"""A confluent-kafka (librdkafka) transactional producer that keeps going while its broker is
killed and restarted: transaction i writes the records "i-0".."i-3" to partitions 0 and 1 of
TOPIC and is committed, or every third one aborted. Each transaction's outcome, as the producer
saw it, is printed as a line "i committed", "i aborted" or "i unknown" ("unknown": the
producer failed fatally while committing, and a new instance took over, so the commit may or
may not have happened).

Usage: transactions_through_kills.py PORT TOPIC produce SECONDS
       transactions_through_kills.py PORT TOPIC read ISOLATION
(read prints the values of both partitions at that isolation level, one per line.)"""

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

port, topic, mode, arg = sys.argv[1:5]
BOOTSTRAP = "127.0.0.1:%s" % port


def say(line):
    print(line)
    sys.stdout.flush()


def new_producer():
    producer = Producer({
        "bootstrap.servers": BOOTSTRAP,
        "transactional.id": topic + "-txn",
        "linger.ms": 5,
        "transaction.timeout.ms": 10000,
    })
    while True:
        try:
            producer.init_transactions(30)
            return producer
        except KafkaException as error:
            if not error.args[0].retriable():
                raise
            time.sleep(0.2)


def run_one(producer, i, commit):
    """Runs transaction i; its outcome."""
    producer.begin_transaction()
    for k in range(4):
        producer.produce(topic, ("%d-%d" % (i, k)).encode(), partition=k % 2)
    while True:
        try:
            if commit:
                producer.commit_transaction(30)
                return "committed"
            producer.abort_transaction(30)
            return "aborted"
        except KafkaException as error:
            err = error.args[0]
            if err.retriable():
                time.sleep(0.1)
                continue
            if err.txn_requires_abort():
                commit = False
                continue
            raise


def produce(seconds):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    producer = new_producer()
    deadline = time.time() + seconds
    i = 0
    while time.time() < deadline:
        commit = i % 3 != 2
        try:
            outcome = run_one(producer, i, commit)
        except KafkaException:
            # Fatal (fenced, or the coordinator lost track during a restart): whether a commit
            # happened is unknown; a new instance takes over, which ends whatever was open.
            outcome = "unknown" if commit else "aborted"
            producer = new_producer()
        say("%d %s" % (i, outcome))
        i += 1


def read(isolation):
    consumer = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": topic + "-reader-" + isolation,
        "isolation.level": isolation,
        "enable.auto.commit": False,
    })
    partitions = [TopicPartition(topic, p, 0) for p in (0, 1)]
    consumer.assign(partitions)
    ends = {}
    for tp in partitions:
        ends[tp.partition] = consumer.get_watermark_offsets(tp, 30)[1]
    values, positions = [], {0: 0, 1: 0}
    deadline = time.time() + 30
    while time.time() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            values.append(message.value().decode())
            positions[message.partition()] = message.offset() + 1
        # Done once every partition's position reaches the end readable at this isolation.
        done = all(
            consumer.position([TopicPartition(topic, p)])[0].offset >= ends[p] or
            positions[p] >= ends[p]
            for p in (0, 1))
        if done and message is None:
            break
    consumer.close()
    for value in values:
        say(value)


if mode == "produce":
    produce(float(arg))
else:
    read(arg)
