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
import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

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
    produce("split", 600, 6)
    seen = []
    lock = threading.Lock()
    stop = {}
    assignments = {}

    def run(name):
        c = consumer("split-group", client_id=name)
        c.subscribe(["split"])
        while not stop.get(name):
            batch = c.poll(timeout_ms=200)
            with lock:
                for records in batch.values():
                    for m in records:
                        seen.append((m.partition, m.offset, name))
                assignments[name] = sorted(tp.partition for tp in c.assignment())
            if batch:
                c.commit()
        c.close()

    def wait_for(names, partitions_each):
        deadline = time.time() + 60
        while time.time() < deadline:
            with lock:
                sizes = [len(assignments.get(n, [])) for n in names]
                union = set().union(*(assignments.get(n, []) for n in names))
            if sizes == partitions_each and union == set(range(6)):
                return
            time.sleep(0.1)
        raise AssertionError("no balanced assignment for %s: %s" % (names, assignments))

    threads = {}
    for name in ["a", "b"]:
        threads[name] = threading.Thread(target=run, args=(name,))
        threads[name].start()
    wait_for(["a", "b"], [3, 3])
    produce("split", 300, 6, start=600)
    threads["c"] = threading.Thread(target=run, args=("c",))
    threads["c"].start()
    wait_for(["a", "b", "c"], [2, 2, 2])
    produce("split", 300, 6, start=900)
    stop["a"] = True
    threads["a"].join()
    assignments.pop("a")
    wait_for(["b", "c"], [3, 3])
    produce("split", 300, 6, start=1200)
    deadline = time.time() + 60
    while time.time() < deadline:
        with lock:
            if len(seen) >= 1500:
                break
        time.sleep(0.1)
    time.sleep(1)
    for name in ["b", "c"]:
        stop[name] = True
        threads[name].join()
    keys = [(p, o) for p, o, _ in seen]
    assert len(set(keys)) == 1500, ("distinct messages", len(set(keys)))
    assert len(keys) == 1500, ("messages read twice", len(keys) - len(set(keys)))
    print("split ok: 1500 messages, each once, across %s" % sorted({n for _, _, n in seen}))
