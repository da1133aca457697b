"""librdkafka's share consumer (confluent-kafka's ShareConsumer, KIP-932) against a broker:
three consumers of one share group read a topic of two partitions while a producer writes,
acknowledging explicitly: every 11th record rejected, every other 5th released at its first
delivery (it must come back), the rest accepted.

Usage: share_consumer_confluent_kafka.py PORT GROUP TOPIC COUNT

Prints one line of counts: accepted, accepted twice, rejected, released records delivered again,
rejected records delivered again.
"""

import sys
import threading
import time

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, NewTopic, ResourceType)

PORT, GROUP, TOPIC, COUNT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
BOOTSTRAP = "127.0.0.1:" + PORT
lock = threading.Lock()
delivered = {}
accepted = {}
counts = {"rejected": 0, "released_again": 0, "rejected_again": 0}
stop = threading.Event()


def prepare():
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result()
    earliest = ConfigEntry("share.auto.offset.reset", "earliest",
                           incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=[earliest])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result()


def consume():
    consumer = ShareConsumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([TOPIC])
    while not stop.is_set():
        records = consumer.poll(0.2)
        for record in records:
            if record.error():
                continue
            n = int(record.value().decode()[1:])
            with lock:
                times = delivered.get(n, 0) + 1
                delivered[n] = times
                if n % 11 == 0:
                    if times > 1:
                        counts["rejected_again"] += 1
                    else:
                        counts["rejected"] += 1
                    kind = AcknowledgeType.REJECT
                elif n % 5 == 0 and times == 1:
                    kind = AcknowledgeType.RELEASE
                else:
                    if n % 5 == 0:
                        counts["released_again"] += 1
                    accepted[n] = accepted.get(n, 0) + 1
                    kind = AcknowledgeType.ACCEPT
            consumer.acknowledge(record, kind)
        if len(records):
            consumer.commit_sync()
    consumer.close()


def main():
    prepare()
    threads = [threading.Thread(target=consume) for _ in range(3)]
    for thread in threads:
        thread.start()
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 5})
    for n in range(COUNT):
        producer.produce(TOPIC, key=str(n), value="r%d" % n)
    producer.flush()
    rejected = (COUNT + 10) // 11
    deadline = time.time() + 90
    while time.time() < deadline:
        with lock:
            if len(accepted) + counts["rejected"] >= COUNT and counts["rejected"] >= rejected:
                break
        time.sleep(0.1)
    time.sleep(1)
    stop.set()
    for thread in threads:
        thread.join()
    twice = sum(1 for times in accepted.values() if times > 1)
    print("accepted=%d accepted_twice=%d rejected=%d released_again=%d rejected_again=%d"
          % (len(accepted), twice, counts["rejected"], counts["released_again"],
             counts["rejected_again"]))


main()
