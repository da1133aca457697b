"""One confluent-kafka transaction for a crash test: creates TOPIC with two partitions, writes
"r-0" to partition 0 and "r-1" to partition 1 in a transaction (transaction.timeout.ms 3 s),
prints "sent", then commits, aborts, or (open) leaves it open; the test kills the broker on the
way.

Usage: transaction_to_kill.py PORT TOPIC commit|abort|open"""

import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

port, topic, end = sys.argv[1:4]
BOOTSTRAP = "127.0.0.1:%s" % port
admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
    future.result(30)
producer = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": topic + "-txn",
                     "transaction.timeout.ms": 3000, "linger.ms": 0})
producer.init_transactions(30)
producer.begin_transaction()
for partition in (0, 1):
    producer.produce(topic, ("r-%d" % partition).encode(), partition=partition)
assert producer.flush(30) == 0
print("sent")
sys.stdout.flush()
if end == "commit":
    producer.commit_transaction(120)
elif end == "abort":
    producer.abort_transaction(120)
else:
    time.sleep(600)
