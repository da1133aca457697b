"""confluent-kafka (librdkafka) consumer groups against `ferrolog serve`; the phases mirror
groups_kafka_python.py, on topics of their own (`ck-resume`, `ck-split`).

Usage: groups_confluent_kafka.py PORT PHASE [N]
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from group_split import run_split

B = "127.0.0.1:%s" % sys.argv[1]
PHASE = sys.argv[2]


def consumer(group, name="c"):
    return Consumer({"bootstrap.servers": B, "group.id": group, "client.id": name,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})


def create(topic, partitions):
    admin = AdminClient({"bootstrap.servers": B})
    for f in admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                           replication_factor=1)]).values():
        f.result(10)


def produce(topic, count, partitions, start=0):
    producer = Producer({"bootstrap.servers": B, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, key=b"%d" % i, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(20) == 0


def committed_offsets(c, topic, partitions):
    found = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    return {tp.partition: max(tp.offset, 0) for tp in found}


if PHASE == "produce":
    create("ck-resume", 4)
    produce("ck-resume", 400, 4)
    print("produced 400")

elif PHASE in ("consume", "rest"):
    want = int(sys.argv[3]) if PHASE == "consume" else None
    c = consumer("ck-resume-group")
    c.subscribe(["ck-resume"])
    got = []
    first = {}
    idle_until = time.time() + 6
    while time.time() < idle_until and (want is None or len(got) < want):
        m = c.poll(0.2)
        if m is None:
            continue
        assert m.error() is None, m.error()
        first.setdefault(m.partition(), m.offset())
        got.append((m.partition(), m.offset()))
        idle_until = time.time() + 4
    if want is not None:
        assert len(got) == want, ("read", len(got), "wanted", want)
    before = committed_offsets(c, "ck-resume", 4)
    for p, offset in first.items():
        assert offset == before[p], ("partition", p, "started at", offset, "committed", before[p])
    assert len(set(got)) == len(got), "a message was read twice"
    if got:
        c.commit(asynchronous=False)
    after = committed_offsets(c, "ck-resume", 4)
    c.close()
    print("read %d committed %d" % (len(got), sum(after.values())))

elif PHASE == "split":
    create("ck-split", 6)

    def consume(name, stop, record):
        c = consumer("ck-split-group", name)
        c.subscribe(["ck-split"])
        while not stop.get(name):
            batch = c.consume(num_messages=100, timeout=0.2)
            for m in batch:
                assert m.error() is None, m.error()
            record(name, [(m.partition(), m.offset()) for m in batch],
                   [tp.partition for tp in c.assignment()])
            if batch:
                c.commit(asynchronous=False)
        c.close()

    run_split("ck-split", produce, consume)
