"""confluent-kafka (librdkafka) transactional producers writing a history to one partition of
TOPIC: a committed transaction, an aborted one, a plain record, a transaction left open (its
records flushed, never ended), a transaction committed after it opened, and another plain
record. Prints `ok` and exits at once, leaving the open transaction to the coordinator (whose
timeout, 10 minutes here, outlasts the test).
Usage: transactional_history.py PORT TOPIC"""

import os
import sys

from confluent_kafka import Producer

port, topic = sys.argv[1:3]
common = {
    "bootstrap.servers": "127.0.0.1:%s" % port,
    "transaction.timeout.ms": 600000,
    "linger.ms": 0,
}


def transactional(transactional_id):
    producer = Producer(dict(common, **{"transactional.id": transactional_id}))
    producer.init_transactions(30)
    producer.begin_transaction()
    return producer


def send(producer, *values):
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    assert producer.flush(30) == 0


committed = transactional("history-committed")
send(committed, "committed-1", "committed-2", "committed-3")
committed.commit_transaction(30)

aborted = transactional("history-aborted")
send(aborted, "aborted-1", "aborted-2")
aborted.abort_transaction(30)

plain = Producer(common)
send(plain, "plain-1")

left_open = transactional("history-open")
send(left_open, "open-1", "open-2")

later = transactional("history-later")
send(later, "later-1")
later.commit_transaction(30)

send(plain, "plain-2")
print("ok")
sys.stdout.flush()
# No destructor runs: the open transaction stays open.
os._exit(0)
