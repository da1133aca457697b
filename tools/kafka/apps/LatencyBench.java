import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Latencies with Kafka's Java client, in microseconds: Kafka's kafka-producer-perf-test and
 * kafka-e2e-latency measure the same way but print whole milliseconds, too coarse for a broker
 * on loopback.
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP TOPIC RECORDS RATE ACKS SIZE}: sends RECORDS values of SIZE
 *       bytes at RATE records a second (on a fixed schedule, sent a millisecond's worth at a
 *       time, as the perf test's throttle lets them go), linger.ms=0, and times each send to its acknowledgement. The
 *       first second's records warm up the JVM and are not counted.
 *   <li>{@code e2e BOOTSTRAP TOPIC RECORDS ACKS SIZE}: kafka-e2e-latency's loop: one record sent,
 *       then polled until a consumer assigned to partition 0 receives it, then the next. The first
 *       tenth of the records warm up the JVM and are not counted.
 * </ul>
 *
 * <p>Prints one JSON line: the records counted, the rate reached, and the 50th, 99th and 99.9th
 * percentiles and the maximum in microseconds.
 */
public final class LatencyBench {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Long.parseLong(args[3]), Long.parseLong(args[4]), args[5],
                Integer.parseInt(args[6]));
            case "e2e" -> endToEnd(args[1], args[2], Integer.parseInt(args[3]), args[4], Integer.parseInt(args[5]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static Properties producerProps(String bootstrap, String acks) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, acks);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return props;
    }

    private static void produce(String bootstrap, String topic, long records, long rate, String acks, int size)
        throws Exception {
        byte[] value = new byte[size];
        long warmup = Math.min(rate, records / 2);
        long[] latencies = new long[(int) (records - warmup)];
        AtomicLong failed = new AtomicLong();
        long started;
        long finished;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(bootstrap, acks))) {
            producer.send(new ProducerRecord<>(topic, value)).get();
            started = System.nanoTime();
            double intervalNs = 1e9 / rate;
            for (long i = 0; i < records; i++) {
                // Ahead of the schedule by more than a millisecond: park until it catches up. The
                // records of each millisecond go out together, as behind the perf test's throttle,
                // and no core is spent spinning (client and broker share the machine).
                long due = started + (long) (i * intervalNs);
                long ahead = due - System.nanoTime();
                if (ahead > 1_000_000) {
                    LockSupport.parkNanos(ahead);
                }
                // Timed from the schedule when the client fell behind it, so its own delays count
                // (no coordinated omission); from the send itself when it went early, within the
                // millisecond let go at once.
                final long sent = Math.min(due, System.nanoTime());
                final int slot = (int) (i - warmup);
                producer.send(new ProducerRecord<>(topic, value), (metadata, error) -> {
                    if (error != null) {
                        failed.incrementAndGet();
                    } else if (slot >= 0) {
                        latencies[slot] = (System.nanoTime() - sent) / 1000;
                    }
                });
            }
            producer.flush();
            finished = System.nanoTime();
        }
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " sends failed");
        }
        report(latencies, records / ((finished - started) / 1e9));
    }

    private static void endToEnd(String bootstrap, String topic, int records, String acks, int size)
        throws Exception {
        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, "latency-bench-" + ProcessHandle.current().pid());
        consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        consumerProps.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 0);
        consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        int warmup = records / 10;
        long[] latencies = new long[records - warmup];
        byte[] value = new byte[size];
        long started;
        long finished;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(bootstrap, acks));
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToEnd(List.of(partition));
            consumer.position(partition);
            started = System.nanoTime();
            for (int i = 0; i < records; i++) {
                long sent = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
                int received = 0;
                while (received == 0) {
                    ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(10_000));
                    if (polled.isEmpty()) {
                        throw new IllegalStateException("no record within 10 s at record " + i);
                    }
                    received = polled.count();
                }
                if (received != 1) {
                    throw new IllegalStateException("expected one record, got " + received + " at record " + i);
                }
                if (i >= warmup) {
                    latencies[i - warmup] = (System.nanoTime() - sent) / 1000;
                }
            }
            finished = System.nanoTime();
        }
        report(latencies, records / ((finished - started) / 1e9));
    }

    private static void report(long[] latencies, double recordsPerSecond) {
        Arrays.sort(latencies);
        System.out.printf(Locale.ROOT, "{\"records\": %d, \"records_per_second\": %.1f, \"p50_us\": %d, \"p99_us\": %d, "
                + "\"p999_us\": %d, \"max_us\": %d}%n", latencies.length, recordsPerSecond,
            percentile(latencies, 0.5), percentile(latencies, 0.99), percentile(latencies, 0.999),
            latencies[latencies.length - 1]);
    }

    private static long percentile(long[] sorted, double fraction) {
        return sorted[Math.min(sorted.length - 1, (int) (sorted.length * fraction))];
    }
}
