"""confluent-kafka with enable.idempotence=true producing through a TCP proxy that cuts every
connection again and again mid-stream; then every message must be in the log exactly once, in
order per partition.

The broker advertises the proxy's address, so every client connection goes through it.
Usage: idempotent_through_cuts.py BROKER_PORT PROXY_PORT
"""

import socket
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

BROKER = ("127.0.0.1", int(sys.argv[1]))
PROXY_PORT = int(sys.argv[2])
TOPIC = "idempotent"
PARTITIONS = 3
MESSAGES = 30000


class Pair:
    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        # Set before a cut: the broker's responses are dropped while requests still reach it,
        # so batches get written whose acknowledgements never arrive, and are retried.
        self.swallow_responses = False


class CuttingProxy:
    """Forwards connections to the broker; while `cutting`, every `interval` seconds it drops
    the broker's responses for a moment and then closes every open connection."""

    def __init__(self, port):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.lock = threading.Lock()
        self.open = []
        self.cuts = 0
        self.cutting = False
        threading.Thread(target=self.accept, daemon=True).start()
        threading.Thread(target=self.cut_loop, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            upstream = socket.create_connection(BROKER)
            pair = Pair(client, upstream)
            with self.lock:
                self.open.append(pair)
            threading.Thread(target=self.pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, pair), daemon=True).start()

    @staticmethod
    def pump(source, sink, responses_of):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if responses_of is not None and responses_of.swallow_responses:
                    continue
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut_loop(self, interval=0.7):
        while True:
            time.sleep(interval)
            if not self.cutting:
                continue
            with self.lock:
                victims, self.open = self.open, []
            for pair in victims:
                pair.swallow_responses = True
            time.sleep(0.1)
            for pair in victims:
                for s in (pair.client, pair.upstream):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                        s.close()
                    except OSError:
                        pass
            if victims:
                self.cuts += 1


proxy = CuttingProxy(PROXY_PORT)
bootstrap = "127.0.0.1:%d" % PROXY_PORT
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)]).values():
    f.result(10)

errors = []
producer = Producer({
    "bootstrap.servers": bootstrap,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 2,
    "batch.num.messages": 200,
    "max.in.flight.requests.per.connection": 5,
    "message.timeout.ms": 120000,
    "reconnect.backoff.ms": 10,
    "reconnect.backoff.max.ms": 100,
})


def delivered(error, message):
    if error is not None:
        errors.append(error)


proxy.cutting = True
for i in range(MESSAGES):
    while True:
        try:
            producer.produce(TOPIC, key=b"%d" % (i % PARTITIONS), value=b"%d" % i,
                             partition=i % PARTITIONS, on_delivery=delivered)
            break
        except BufferError:
            producer.poll(0.05)
    if i % 500 == 0:
        producer.poll(0)
        time.sleep(0.1)  # spread the run over several seconds, so over many cuts
remaining = producer.flush(120)
proxy.cutting = False
assert remaining == 0, ("undelivered", remaining)
assert not errors, errors[:5]
assert proxy.cuts >= 5, ("the proxy cut only", proxy.cuts, "times")

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
values = {p: [] for p in range(PARTITIONS)}
deadline = time.time() + 60
count = 0
while count < MESSAGES and time.time() < deadline:
    m = consumer.poll(1.0)
    if m is None:
        continue
    assert m.error() is None, m.error()
    values[m.partition()].append(int(m.value()))
    count += 1
# Nothing more than MESSAGES: a duplicate would show up as an extra message.
extra = consumer.poll(2.0)
consumer.close()
assert extra is None, ("a message beyond the expected ones", extra.partition(), extra.offset())
for p in range(PARTITIONS):
    expected = list(range(p, MESSAGES, PARTITIONS))
    assert values[p] == expected, ("partition", p, "first difference at",
                                   next(i for i, (a, b) in enumerate(zip(values[p] + [None] * len(expected), expected)) if a != b))
print("idempotent ok: %d messages exactly once and in order through %d cuts" % (MESSAGES, proxy.cuts))
