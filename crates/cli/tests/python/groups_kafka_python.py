"""kafka-python consumer groups against `ferrolog serve`.

Usage: groups_kafka_python.py PORT PHASE
  produce   creates topic `resume` (4 partitions) with 400 keyed messages
  consume N a consumer in group `resume-group` reads N messages after the group's committed
            offsets (checking it starts exactly there), commits, and leaves
  rest      reads whatever is left after the committed offsets and prints the count
  split     two consumers split a 6-partition topic; a third joins, then one leaves; every
            message is consumed exactly once, with commits after every poll
"""

import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from group_split import run_split

B = "127.0.0.1:%s" % sys.argv[1]
PHASE = sys.argv[2]


def consumer(group, **extra):
    return KafkaConsumer(bootstrap_servers=B, group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", **extra)


def create(topic, partitions):
    admin = KafkaAdminClient(bootstrap_servers=B)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()


def produce(topic, count, partitions, start=0):
    producer = KafkaProducer(bootstrap_servers=B)
    for i in range(start, start + count):
        producer.send(topic, key=b"%d" % i, value=b"%d" % i, partition=i % partitions)
    producer.flush()
    producer.close()


def error_names(results):
    """Admin answers map groups or partitions to errors: classes, instances or names."""
    items = results.items() if isinstance(results, dict) else results
    return {key: error if isinstance(error, str) else getattr(error, "__name__", type(error).__name__)
            for key, error in items}


def committed_offsets(c, topic, partitions):
    return {p: (c.committed(TopicPartition(topic, p)) or 0) for p in range(partitions)}


if PHASE == "produce":
    create("resume", 4)
    produce("resume", 400, 4)
    print("produced 400")

elif PHASE in ("consume", "rest"):
    want = int(sys.argv[3]) if PHASE == "consume" else None
    c = consumer("resume-group", consumer_timeout_ms=4000)
    c.subscribe(["resume"])
    got = []
    first = {}
    for m in c:
        first.setdefault(m.partition, m.offset)
        got.append((m.partition, m.offset))
        if want is not None and len(got) == want:
            break
    # The group resumed exactly at its committed offsets: no partition started elsewhere.
    before = committed_offsets(c, "resume", 4)
    for p, offset in first.items():
        assert offset == before[p], ("partition", p, "started at", offset, "committed", before[p])
    assert len(set(got)) == len(got), "a message was read twice"
    c.commit()
    after = committed_offsets(c, "resume", 4)
    c.close()
    print("read %d committed %d" % (len(got), sum(after.values())))

elif PHASE == "split":
    create("split", 6)

    def consume(name, stop, record):
        c = consumer("split-group", client_id=name)
        c.subscribe(["split"])
        while not stop.get(name):
            batch = c.poll(timeout_ms=200)
            messages = [(m.partition, m.offset) for records in batch.values() for m in records]
            record(name, messages, [tp.partition for tp in c.assignment()])
            if batch:
                c.commit()
        c.close()

    run_split("split", produce, consume)

elif PHASE == "admin":
    # Run after the phases above: resume-group is empty with 100 committed per partition.
    admin = KafkaAdminClient(bootstrap_servers=B)
    listed = {g["group_id"]: g for g in admin.list_groups()}
    assert listed["resume-group"]["protocol_type"] == "consumer", listed
    assert "split-group" in listed, listed
    described = admin.describe_groups(["resume-group"])["resume-group"]
    assert described["group_state"] == "Empty" and not described["members"], described
    offsets = admin.list_group_offsets({"resume-group": None})["resume-group"]
    assert {tp.partition: m.offset for tp, m in offsets.items()} == {0: 100, 1: 100, 2: 100, 3: 100}, offsets

    # A live member: described with its assignment; the group cannot be deleted, nor the
    # offsets of a topic it subscribes to.
    busy = consumer("busy-group")
    busy.subscribe(["resume"])
    deadline = time.time() + 30
    while not busy.assignment() and time.time() < deadline:
        busy.poll(timeout_ms=200)
    busy.commit()
    described = admin.describe_groups(["busy-group"])["busy-group"]
    assert described["group_state"] == "Stable", described
    assert len(described["members"]) == 1, described
    assert error_names(admin.delete_groups(["busy-group"])) == {"busy-group": "NonEmptyGroupError"}
    refused = admin.delete_group_offsets("busy-group", [TopicPartition("resume", 0)])
    assert error_names(refused) == {TopicPartition("resume", 0): "GroupSubscribedToTopicError"}, refused
    busy.close()

    # Offsets deleted one partition at a time, then whole groups.
    deleted = admin.delete_group_offsets("resume-group", [TopicPartition("resume", 0)])
    assert error_names(deleted) == {TopicPartition("resume", 0): "NoError"}, deleted
    offsets = admin.list_group_offsets({"resume-group": None})["resume-group"]
    assert sorted(tp.partition for tp in offsets) == [1, 2, 3], offsets
    names = error_names(admin.delete_groups(["resume-group", "busy-group", "no-such-group"]))
    assert names["resume-group"] == "OK" and names["busy-group"] == "OK", names
    assert names["no-such-group"] == "GroupIdNotFoundError", names
    assert "resume-group" not in {g["group_id"] for g in admin.list_groups()}
    admin.close()
    print("admin ok")
