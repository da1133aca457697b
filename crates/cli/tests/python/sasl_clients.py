"""kafka-python or confluent-kafka (librdkafka) over SASL_PLAINTEXT: produce five records to
TOPIC and read them back in GROUP, authenticated with MECHANISM as USER with PASSWORD
(MECHANISM `none`: a PLAINTEXT client on the SASL listener, which has no credentials).
Prints `ok 5` when its five came back, exactly once, or `refused: <error>` and exits 2 when the broker would
not let the client in.
Usage: sasl_clients.py PORT kafka-python|confluent MECHANISM USER PASSWORD TOPIC GROUP"""

import sys
import time

port, client, mechanism, user, password, topic, group = sys.argv[1:8]
bootstrap = "127.0.0.1:%s" % port
# Runs with other mechanisms share the topic: each checks its own records.
prefix = b"%s-%s-" % (client.encode(), mechanism.encode())
values = [prefix + b"%d" % i for i in range(5)]


def refused(error):
    print("refused: %s" % error)
    sys.exit(2)


def with_kafka_python():
    from kafka import KafkaConsumer, KafkaProducer

    # A client that is refused keeps trying to bootstrap until this passes.
    options = {"bootstrap_servers": bootstrap, "request_timeout_ms": 5000, "bootstrap_timeout_ms": 5000}
    if mechanism != "none":
        options.update(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
    try:
        producer = KafkaProducer(max_block_ms=5000, **options)
        for value in values:
            producer.send(topic, value).get(timeout=10)
        producer.close()
        consumer = KafkaConsumer(
            topic,
            group_id=group,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10000,
            **options,
        )
        got = [message.value for message in consumer]
        consumer.close()
    except Exception as error:  # every client error means it was not let in
        refused("%s: %s" % (type(error).__name__, error))
    return got


def with_confluent():
    from confluent_kafka import Consumer, KafkaError, Producer

    errors = []

    def on_error(error):
        errors.append(error)

    options = {"bootstrap.servers": bootstrap, "error_cb": on_error}
    if mechanism != "none":
        options.update(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": mechanism,
                "sasl.username": user,
                "sasl.password": password,
            }
        )
    producer = Producer(dict(options, **{"message.timeout.ms": 5000}))
    delivered = []

    def on_delivery(error, message):
        if error is None:
            delivered.append(message.value())

    for value in values:
        producer.produce(topic, value, on_delivery=on_delivery)
    producer.flush(8)
    authentication = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    if authentication:
        refused(authentication[0])
    if len(delivered) < len(values):
        refused("%d of %d records delivered; errors: %s" % (len(delivered), len(values), errors))
    consumer = Consumer(dict(options, **{"group.id": group, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    got = []
    deadline = time.time() + 20
    while len([v for v in got if v.startswith(prefix)]) < len(values) and time.time() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


got = with_kafka_python() if client == "kafka-python" else with_confluent()
got = [value for value in got if value.startswith(prefix)]
assert sorted(got) == sorted(values), got
print("ok %d" % len(got))
