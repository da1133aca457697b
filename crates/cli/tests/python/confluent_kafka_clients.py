"""confluent-kafka (librdkafka) against `ferrolog serve`: admin topic creation and listing,
produce with acks=all and acks=0, a consumer by assign(), watermarks, offsets by time, topic
configs. With `after-restart`, checks what must survive a broker restart: the topic config set
before it, and that a deleted and re-created topic starts from the defaults.
Usage: confluent_kafka_clients.py PORT [after-restart]"""

import sys
import time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
B = "127.0.0.1:%s" % sys.argv[1]
admin = AdminClient({"bootstrap.servers": B})

if sys.argv[2:] == ["after-restart"]:
    resource = ConfigResource("topic", "ck")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "3600000", configs["retention.ms"]
    for f in admin.delete_topics(["ck"]).values():
        f.result(10)
    for f in admin.create_topics([NewTopic("ck", num_partitions=1, replication_factor=1)]).values():
        f.result(10)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "604800000", configs["retention.ms"]
    print("confluent-kafka after restart ok")
    sys.exit(0)
fs = admin.create_topics([NewTopic("ck", num_partitions=2, replication_factor=1)])
for t, f in fs.items(): f.result(10)
md = admin.list_topics(timeout=10)
assert len(md.topics["ck"].partitions) == 2, md.topics
for acks in ["all", "0"]:
    p = Producer({"bootstrap.servers": B, "acks": acks, "linger.ms": 5})
    for i in range(1000):
        p.produce("ck", key=b"k%d" % i, value=b"%s-%d" % (acks.encode(), i), partition=i % 2)
    assert p.flush(20) == 0
c = Consumer({"bootstrap.servers": B, "group.id": "unused", "enable.auto.commit": False})
c.assign([TopicPartition("ck", 0, OFFSET_BEGINNING), TopicPartition("ck", 1, OFFSET_BEGINNING)])
got = []
deadline = time.time() + 20
while len(got) < 2000 and time.time() < deadline:
    m = c.poll(1.0)
    if m is None: continue
    assert m.error() is None, m.error()
    got.append(m.value())
assert len(got) == 2000, len(got)
lo, hi = c.get_watermark_offsets(TopicPartition("ck", 0), timeout=10)
assert (lo, hi) == (0, 1000), (lo, hi)
before = int(time.time() * 1000) - 1
p = Producer({"bootstrap.servers": B})
p.produce("ck", value=b"late", partition=0)
p.flush(10)
found = c.offsets_for_times([TopicPartition("ck", 0, before)], timeout=10)[0]
assert found.offset == 1000, found
c.close()

# Admin: more partitions, topic configs described and changed, the cluster described.
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, NewPartitions

for f in admin.create_partitions([NewPartitions("ck", 4)]).values():
    f.result(10)
assert len(admin.list_topics(timeout=10).topics["ck"].partitions) == 4
resource = ConfigResource("topic", "ck")
configs = admin.describe_configs([resource])[resource].result(10)
assert configs["retention.ms"].value == "604800000", configs["retention.ms"]
change = ConfigResource("topic", "ck", incremental_configs=[
    ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
admin.incremental_alter_configs([change])[change].result(10)
configs = admin.describe_configs([resource])[resource].result(10)
assert configs["retention.ms"].value == "3600000", configs["retention.ms"]
bad = ConfigResource("topic", "ck", incremental_configs=[
    ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
try:
    admin.incremental_alter_configs([bad])[bad].result(10)
    raise SystemExit("an invalid value should be refused")
except Exception as error:
    assert "retention.ms" in str(error), error
cluster = admin.describe_cluster().result(10)
assert len(cluster.nodes) == 1, cluster
print("confluent-kafka ok")
