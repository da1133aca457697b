"""kafka-python against `ferrolog serve`: produce with every codec and read everything back,
offsets by time, keyed records with headers, and admin (topics, records, log dirs, configs
by AlterConfigs).  Usage: kafka_python_clients.py PORT"""

import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

BOOTSTRAP = "127.0.0.1:%s" % sys.argv[1]


def consume_all(topic, expected):
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    messages = []
    for message in consumer:
        messages.append(message)
        if len(messages) == expected:
            break
    consumer.close()
    return messages


for codec in [None, "gzip", "snappy", "lz4", "zstd"]:
    topic = "codec-%s" % (codec or "none")
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, compression_type=codec, acks="all", linger_ms=5)
    for i in range(200):
        producer.send(topic, key=b"key-%d" % i, value=b"value-%d" % i, headers=[("h", b"%d" % i)])
    producer.flush()
    producer.close()
    messages = consume_all(topic, 200)
    assert [m.value for m in messages] == [b"value-%d" % i for i in range(200)], (codec, len(messages))
    assert [m.offset for m in messages] == list(range(200)), codec
    assert messages[7].key == b"key-7" and messages[7].headers == [("h", b"7")], messages[7]
    print("codec %s: 200 records round trip" % codec)

# Offsets by timestamp.
producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
base = int(time.time() * 1000) - 100_000
for i in range(10):
    producer.send("times", value=b"%d" % i, timestamp_ms=base + i * 1000)
producer.flush()
producer.close()
consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None)
tp = TopicPartition("times", 0)
found = consumer.offsets_for_times({tp: base + 4500})[tp]
assert found.offset == 5 and found.timestamp == base + 5000, found
assert consumer.beginning_offsets([tp])[tp] == 0
assert consumer.end_offsets([tp])[tp] == 10
consumer.close()
print("offsets by time: ok")

# Admin: create a topic with partitions and a config, delete records, delete the topic.
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
admin.create_topics([NewTopic("admin-topic", num_partitions=3, replication_factor=1,
                              topic_configs={"retention.ms": "60000"})])
try:
    admin.create_topics([NewTopic("admin-topic", num_partitions=1, replication_factor=1)])
    raise SystemExit("creating an existing topic should fail")
except TopicAlreadyExistsError:
    pass
producer = KafkaProducer(bootstrap_servers=BOOTSTRAP)
for i in range(10):
    producer.send("admin-topic", value=b"%d" % i, partition=0)
producer.flush()
producer.close()
consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None)
partitions = consumer.partitions_for_topic("admin-topic")
assert partitions == {0, 1, 2}, partitions
tp = TopicPartition("admin-topic", 0)
admin.delete_records({tp: 4})
assert consumer.beginning_offsets([tp])[tp] == 4
consumer.close()
log_dirs = admin.describe_log_dirs()
assert "admin-topic" in repr(log_dirs), log_dirs

# Topic configs through the older AlterConfigs (incremental=False): the request carries the
# whole set, so a key it leaves out goes back to its default.
from kafka.admin import ConfigResource, ConfigResourceType


def topic_overrides(name):
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    return {key: entry["value"] for key, entry in described["topic"][name].items()}


assert topic_overrides("admin-topic") == {"retention.ms": "60000"}, topic_overrides("admin-topic")
result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-topic",
                                             configs={"segment.ms": "3600000"})],
                             incremental=False, raise_on_unknown=False)
assert result == {"topic": {"admin-topic": "OK"}}, result
assert topic_overrides("admin-topic") == {"retention.ms": "60000", "segment.ms": "3600000"}
admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-topic", configs={"retention.ms": None})],
                    incremental=False, raise_on_unknown=False)
assert topic_overrides("admin-topic") == {"segment.ms": "3600000"}, topic_overrides("admin-topic")
result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-topic",
                                             configs={"segment.ms": "soon"})],
                             incremental=False, raise_on_unknown=False)
assert "segment.ms" in result["topic"]["admin-topic"], result
assert topic_overrides("admin-topic") == {"segment.ms": "3600000"}, "a refused change changes nothing"
admin.delete_topics(["admin-topic"])
admin.close()
consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None)
assert "admin-topic" not in consumer.topics(), consumer.topics()
consumer.close()
print("admin: ok")
