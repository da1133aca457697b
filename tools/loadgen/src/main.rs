//! Produces or consumes fixed-size messages through a real Kafka client as fast as it can and
//! prints one JSON line with the figures, the client's CPU time among them. Used by
//! `scripts/bench.sh` for the loopback benchmark: the Python clients top out near 0.5 GB/s on
//! this class of machine, far below the broker, so the clients here are librdkafka (the default)
//! and rskafka.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

mod ready;
mod rskafka_client;
mod sink;
mod stopwatch;

use stopwatch::{Outcome, Stopwatch};

#[derive(Parser)]
struct Args {
    /// Bootstrap servers.
    #[arg(long, default_value = "127.0.0.1:9092")]
    brokers: String,
    /// The topic to produce to or consume from.
    #[arg(long, default_value = "bench")]
    topic: String,
    /// Messages to produce or consume.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Extra librdkafka properties, `key=value`.
    #[arg(long = "set", value_parser = parse_property)]
    properties: Vec<(String, String)>,
    /// The client library: librdkafka (`rdkafka`) or `rskafka`.
    #[arg(long, default_value = "rdkafka")]
    client: Client,
    /// rskafka only: records per produce request.
    #[arg(long, default_value_t = 1000)]
    batch: u64,
    /// rskafka only: produce requests kept outstanding.
    #[arg(long, default_value_t = 4)]
    in_flight: usize,
    /// rskafka only: the most bytes one fetch returns.
    #[arg(long, default_value_t = 4 << 20)]
    fetch_bytes: i32,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Client {
    Rdkafka,
    Rskafka,
}

#[derive(Subcommand, Clone)]
enum Command {
    /// Sends `messages` values of `size` bytes with acks=1 and waits for every acknowledgement;
    /// with `--transaction-records N`, as a transactional producer (acks=all, idempotent)
    /// committing a transaction every N messages.
    Produce {
        #[arg(long, default_value_t = 1024)]
        size: usize,
        #[arg(long)]
        transaction_records: Option<u64>,
    },
    /// Reads `messages` messages from the start of partitions `0..partitions`, or of
    /// `--partition` alone.
    Consume {
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        #[arg(long)]
        partition: Option<i32>,
    },
    /// Produces one message to each of the first `--partitions` partitions of each of
    /// `--topics` as soon as the broker serves them and prints when the last was acknowledged
    /// (start-to-serving, see ready.rs).
    Ready {
        #[arg(long, value_delimiter = ',', required = true)]
        topics: Vec<String>,
        #[arg(long)]
        partitions: i32,
        #[arg(long, default_value_t = 600)]
        timeout_seconds: u64,
    },
    /// Stands in for the broker, doing as little as one can (see sink.rs), so the clients can be
    /// measured against it; serves until killed.
    Sink {
        #[arg(long, default_value = "127.0.0.1:9092")]
        listen: String,
        /// Size of each record value fetches return.
        #[arg(long, default_value_t = 1024)]
        size: usize,
        /// Records in each batch fetches return.
        #[arg(long, default_value_t = 1000)]
        batch_records: i64,
        /// Records built into the in-memory log that fetches read (about 1 GB by default).
        #[arg(long, default_value_t = 1_001_000)]
        log_records: i64,
        /// Where the log ends before anything is produced.
        #[arg(long, default_value_t = 0)]
        log_end: i64,
        /// Serve TLS with this PEM file's key and certificate chain, as `ferrolog serve` serves
        /// an SSL listener (rustls, the socket read ahead by the same buffer).
        #[arg(long)]
        tls_pem: Option<std::path::PathBuf>,
    },
}

fn parse_property(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .ok_or_else(|| format!("expected key=value, got {text:?}"))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &args.brokers);
    let outcome = match (args.client, args.command.clone()) {
        (
            _,
            Command::Ready {
                topics,
                partitions,
                timeout_seconds,
            },
        ) => {
            return ready::ready(
                &args.brokers,
                &topics,
                partitions,
                Duration::from_secs(timeout_seconds),
            );
        }
        (
            _,
            Command::Sink {
                listen,
                size,
                batch_records,
                log_records,
                log_end,
                tls_pem,
            },
        ) => {
            let log = sink::LogShape {
                size,
                records_per_batch: batch_records,
                log_records,
                log_end,
            };
            return sink::serve(&listen, &log, tls_pem.as_deref());
        }
        (Client::Rskafka, Command::Produce { size, .. }) => rskafka_client::produce(
            &args.brokers,
            &args.topic,
            args.messages,
            size,
            args.batch,
            args.in_flight,
        )?,
        (
            Client::Rskafka,
            Command::Consume {
                partitions,
                partition,
            },
        ) => {
            if partitions != 1 || partition.unwrap_or(0) != 0 {
                bail!("with --client rskafka, consume reads partition 0 only");
            }
            rskafka_client::consume(&args.brokers, &args.topic, args.messages, args.fetch_bytes)?
        }
        (
            Client::Rdkafka,
            Command::Produce {
                size,
                transaction_records,
            },
        ) => rdkafka_produce(config, &args, size, transaction_records)?,
        (
            Client::Rdkafka,
            Command::Consume {
                partitions,
                partition,
            },
        ) => rdkafka_consume(config, &args, partitions, partition)?,
    };
    let Outcome {
        messages,
        bytes,
        elapsed,
        cpu,
    } = outcome;
    let seconds = elapsed.as_secs_f64();
    let cpu_seconds = cpu.as_secs_f64();
    println!(
        "{{\"messages\": {messages}, \"bytes\": {bytes}, \"seconds\": {seconds:.3}, \"bytes_per_second\": {:.0}, \"cpu_seconds\": {cpu_seconds:.3}}}",
        bytes as f64 / seconds
    );
    Ok(())
}

/// Produces with librdkafka, tuned as a throughput benchmark's producer (transactions of
/// `transaction_records` each, if given).
fn rdkafka_produce(
    mut config: ClientConfig,
    args: &Args,
    size: usize,
    transaction_records: Option<u64>,
) -> Result<Outcome> {
    config
        .set("acks", "1")
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576");
    if transaction_records.is_some() {
        config.set(
            "transactional.id",
            format!("ferrolog-loadgen-{}", std::process::id()),
        );
    }
    for (key, value) in &args.properties {
        config.set(key, value);
    }
    match transaction_records {
        Some(per_transaction) => produce_transactions(
            &config,
            &args.topic,
            args.messages,
            size,
            per_transaction.max(1),
        ),
        None => produce(&config, &args.topic, args.messages, size),
    }
}

/// Consumes `partitions` (or only `partition`) with librdkafka, tuned for throughput.
fn rdkafka_consume(
    mut config: ClientConfig,
    args: &Args,
    partitions: i32,
    partition: Option<i32>,
) -> Result<Outcome> {
    config
        .set("group.id", "ferrolog-loadgen")
        .set("enable.auto.commit", "false")
        .set("fetch.max.bytes", "52428800")
        .set("fetch.wait.max.ms", "100")
        // No pause before the next fetch when the local queue is full: the benchmark
        // drains it at once, so waiting (1 s by default) only idles the connection.
        .set("fetch.queue.backoff.ms", "0")
        // Room for more responses in the local queue (by default 100,000 messages or
        // 64 MiB) and a socket buffer that holds a whole 4 MiB response, as a consumer
        // tuned for throughput would have: consuming from one broker went from
        // 1.6–1.7 GB/s to 2.1–2.2 GB/s (medians of 5 runs each, 2026-11-30).
        .set("queued.max.messages.kbytes", "262144")
        .set("queued.min.messages", "1000000")
        .set("max.partition.fetch.bytes", "4194304")
        .set("socket.receive.buffer.bytes", "8388608");
    for (key, value) in &args.properties {
        config.set(key, value);
    }
    let assigned: Vec<i32> = match partition {
        Some(partition) => vec![partition],
        None => (0..partitions).collect(),
    };
    consume(&config, &args.topic, args.messages, &assigned)
}

fn produce(config: &ClientConfig, topic: &str, messages: u64, size: usize) -> Result<Outcome> {
    let producer: BaseProducer = config.create().context("creating the producer")?;
    let value = vec![b'x'; size];
    // One message first, so the connection and the topic's metadata are in place before the
    // clock starts (their fixed cost is not transfer).
    producer
        .send(BaseRecord::<[u8], [u8]>::to(topic).payload(&value[..]))
        .map_err(|(error, _)| error)
        .context("producing the warm-up message")?;
    producer
        .flush(Duration::from_secs(30))
        .context("waiting for the warm-up message")?;
    let stopwatch = Stopwatch::start();
    for index in 0..messages {
        let key = index.to_be_bytes();
        let mut record = BaseRecord::<[u8], [u8]>::to(topic)
            .key(&key[..])
            .payload(&value[..]);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    producer.poll(Duration::from_millis(1));
                }
                Err((error, _)) => bail!("producing message {index}: {error}"),
            }
        }
        if index % 1024 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .context("waiting for acknowledgements")?;
    Ok(stopwatch.finish(messages, messages * size as u64))
}

/// Sends `messages` values in transactions of `per_transaction`, each committed before the next
/// begins (a warm-up transaction of one message first).
fn produce_transactions(
    config: &ClientConfig,
    topic: &str,
    messages: u64,
    size: usize,
    per_transaction: u64,
) -> Result<Outcome> {
    let producer: BaseProducer = config.create().context("creating the producer")?;
    let timeout = Duration::from_secs(60);
    producer
        .init_transactions(timeout)
        .context("initializing transactions")?;
    let value = vec![b'x'; size];
    let send = |index: u64| -> Result<()> {
        let key = index.to_be_bytes();
        let mut record = BaseRecord::<[u8], [u8]>::to(topic)
            .key(&key[..])
            .payload(&value[..]);
        loop {
            match producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    producer.poll(Duration::from_millis(1));
                }
                Err((error, _)) => bail!("producing message {index}: {error}"),
            }
        }
    };
    producer.begin_transaction()?;
    send(u64::MAX)?;
    producer
        .commit_transaction(timeout)
        .context("committing the warm-up transaction")?;
    let stopwatch = Stopwatch::start();
    let mut index = 0;
    while index < messages {
        producer.begin_transaction()?;
        let end = (index + per_transaction).min(messages);
        while index < end {
            send(index)?;
            if index % 1024 == 0 {
                producer.poll(Duration::ZERO);
            }
            index += 1;
        }
        producer
            .commit_transaction(timeout)
            .with_context(|| format!("committing the transaction ending at message {end}"))?;
    }
    Ok(stopwatch.finish(messages, messages * size as u64))
}

fn consume(
    config: &ClientConfig,
    topic: &str,
    messages: u64,
    partitions: &[i32],
) -> Result<Outcome> {
    let consumer: BaseConsumer = config.create().context("creating the consumer")?;
    let mut assignment = TopicPartitionList::new();
    for &partition in partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    // The clock starts at the first message, so connecting and finding the start offsets (a few
    // hundred milliseconds of fixed cost) do not count against the transfer rate.
    let mut stopwatch = Stopwatch::start();
    let (mut received, mut bytes) = (0u64, 0u64);
    while received < messages {
        match consumer.poll(Duration::from_secs(10)) {
            Some(Ok(message)) => {
                if received == 0 {
                    stopwatch = Stopwatch::start();
                }
                received += 1;
                bytes += message.payload().map_or(0, |payload| payload.len() as u64);
            }
            Some(Err(error)) => bail!("consuming after {received} messages: {error}"),
            None => bail!("no message for 10 s after {received} of {messages}"),
        }
    }
    Ok(stopwatch.finish(received, bytes))
}
