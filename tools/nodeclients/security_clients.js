// kafkajs over a secured listener: produces five records to TOPIC and reads them back in GROUP,
// authenticated with MECHANISM (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) as USER with PASSWORD,
// or without SASL when MECHANISM is `none`. With FERROLOG_TLS_CA set (a PEM file) it speaks TLS
// (SSL, or SASL_SSL with a mechanism), presenting FERROLOG_TLS_CERT and FERROLOG_TLS_KEY if set.
// Prints `ok 5` when its five records came back exactly once, or `refused: <error>` and exits 2
// when the broker would not let it in; any other failure exits 1.
// Usage: node security_clients.js PORT MECHANISM USER PASSWORD TOPIC GROUP
'use strict';

const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [port, mechanism, user, password, topic, group] = process.argv.slice(2);
const tlsCa = process.env.FERROLOG_TLS_CA;
const tlsCert = process.env.FERROLOG_TLS_CERT;
const tlsKey = process.env.FERROLOG_TLS_KEY;
// Runs with other credentials share the topic: each checks its own records.
const prefix = `kafkajs-${mechanism}-${user}-`;
const values = [0, 1, 2, 3, 4].map((i) => prefix + i);

const config = {
  clientId: 'ferrolog-test',
  brokers: [`127.0.0.1:${port}`],
  connectionTimeout: 5000,
  authenticationTimeout: 5000,
  requestTimeout: 10000,
  // A refused client would otherwise retry for minutes.
  retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1000 },
  logLevel: logLevel.NOTHING,
};
if (mechanism !== 'none') {
  config.sasl = { mechanism: mechanism.toLowerCase(), username: user, password };
}
if (tlsCa) {
  config.ssl = { ca: [fs.readFileSync(tlsCa)] };
  if (tlsCert) {
    config.ssl.cert = fs.readFileSync(tlsCert);
    config.ssl.key = fs.readFileSync(tlsKey);
  }
}

// What tells a refusal from other failures: SASL's error, a TLS error (an untrusted or missing
// certificate), or a connection the broker closed during the exchange.
function isRefusal(error) {
  const text = `${error.name} ${error.message} ${error.cause ? error.cause.message : ''}`;
  return /SASL|[Aa]uthentication|SSL|TLS|certificate|Connection error|Closed connection|ECONNRESET|socket hang up/.test(
    text,
  );
}

async function main() {
  const kafka = new Kafka(config);
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  await producer.send({ topic, messages: values.map((value) => ({ value })) });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const deadline = setTimeout(() => resolve(), 20000);
    consumer
      .run({
        eachMessage: async ({ message }) => {
          const value = message.value.toString();
          if (value.startsWith(prefix)) {
            got.push(value);
          }
          if (got.length >= values.length) {
            clearTimeout(deadline);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  const expected = [...values].sort();
  if (JSON.stringify([...got].sort()) !== JSON.stringify(expected)) {
    throw new Error(`read back ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
  }
  console.log(`ok ${got.length}`);
}

main().then(
  () => process.exit(0),
  (error) => {
    if (isRefusal(error)) {
      console.log(`refused: ${error.name}: ${error.message}`);
      process.exit(2);
    }
    console.log(`failed: ${error.name}: ${error.message}`);
    process.exit(1);
  },
);
