"""confluent-kafka (librdkafka) transactional producers writing a history to one partition of
TOPIC: a committed transaction, an aborted one, a plain record, a transaction left open (its
records flushed, never ended), a transaction committed after it opened, and another plain
record. Prints `ok` and exits at once, leaving the open transaction to the coordinator (whose
timeout, 10 minutes here, outlasts the test).

A broker may answer the end of a transaction before its marker is in the log (Kafka 4.4 does),
so after each one the script waits for the marker to take its offset: the next producer's
records then follow it, and the history has the same offsets on every broker.
Usage: transactional_history.py PORT TOPIC"""

import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

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


# read_uncommitted: its log end is the high watermark, which a marker moves even while the
# open transaction holds the last stable offset back.
watcher = Consumer(
    {
        "bootstrap.servers": common["bootstrap.servers"],
        "group.id": "history-watch",
        "isolation.level": "read_uncommitted",
    }
)


def log_end():
    """The partition's high watermark, asked of the broker."""
    return watcher.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)[1]


def end(producer, commit):
    """Commits or aborts, then waits (up to 30 s) for the marker to be written."""
    before = log_end()
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)
    deadline = time.monotonic() + 30
    while log_end() <= before:
        assert time.monotonic() < deadline, "the transaction's marker was never written"
        time.sleep(0.05)


committed = transactional("history-committed")
send(committed, "committed-1", "committed-2", "committed-3")
end(committed, commit=True)

aborted = transactional("history-aborted")
send(aborted, "aborted-1", "aborted-2")
end(aborted, commit=False)

plain = Producer(common)
send(plain, "plain-1")

left_open = transactional("history-open")
send(left_open, "open-1", "open-2")

later = transactional("history-later")
send(later, "later-1")
end(later, commit=True)

send(plain, "plain-2")
print("ok")
sys.stdout.flush()
# No destructor runs: the open transaction stays open.
os._exit(0)
