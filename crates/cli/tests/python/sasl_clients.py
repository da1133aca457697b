"""kafka-python or confluent-kafka (librdkafka) over SASL_PLAINTEXT: produce five records to
TOPIC and read them back in GROUP, authenticated with MECHANISM as USER with PASSWORD
(MECHANISM `none`: a PLAINTEXT client on the SASL listener, which has no credentials).
Prints `ok 5` when its five came back, exactly once, or `refused: <error>` and exits 2 when the broker would
not let the client in. With FERROLOG_TLS_CA set (a PEM file), the client speaks TLS (SSL, or
SASL_SSL with a mechanism), presenting FERROLOG_TLS_CERT and FERROLOG_TLS_KEY if set.
Usage: sasl_clients.py PORT kafka-python|confluent MECHANISM USER PASSWORD TOPIC GROUP"""

import os
import sys
import time

port, client, mechanism, user, password, topic, group = sys.argv[1:8]
bootstrap = "127.0.0.1:%s" % port
tls_ca = os.environ.get("FERROLOG_TLS_CA")
tls_cert = os.environ.get("FERROLOG_TLS_CERT")
tls_key = os.environ.get("FERROLOG_TLS_KEY")
if tls_ca:
    protocol = "SSL" if mechanism == "none" else "SASL_SSL"
else:
    protocol = "PLAINTEXT" if mechanism == "none" else "SASL_PLAINTEXT"
# Runs with other mechanisms share the topic: each checks its own records.
prefix = b"%s-%s-" % (client.encode(), mechanism.encode())
values = [prefix + b"%d" % i for i in range(5)]


def refused(error):
    print("refused: %s" % error)
    sys.exit(2)


def with_kafka_python():
    from kafka import KafkaConsumer, KafkaProducer

    # A client that is refused keeps trying to bootstrap until this passes.
    options = {
        "bootstrap_servers": bootstrap,
        "request_timeout_ms": 5000,
        "bootstrap_timeout_ms": 5000,
        "security_protocol": protocol,
    }
    if mechanism != "none":
        options.update(
            sasl_mechanism=mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
    if tls_ca:
        options.update(ssl_cafile=tls_ca, ssl_certfile=tls_cert, ssl_keyfile=tls_key)
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

    options = {"bootstrap.servers": bootstrap, "error_cb": on_error, "security.protocol": protocol}
    if mechanism != "none":
        options.update(
            {
                "sasl.mechanisms": mechanism,
                "sasl.username": user,
                "sasl.password": password,
            }
        )
    if tls_ca:
        options["ssl.ca.location"] = tls_ca
        if tls_cert:
            options.update({"ssl.certificate.location": tls_cert, "ssl.key.location": tls_key})
    producer = Producer(dict(options, **{"message.timeout.ms": 5000}))
    delivered = []

    def on_delivery(error, message):
        if error is None:
            delivered.append(message.value())

    for value in values:
        producer.produce(topic, value, on_delivery=on_delivery)
    producer.flush(8)
    authentication = [
        e for e in errors if e.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL)
    ]
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
