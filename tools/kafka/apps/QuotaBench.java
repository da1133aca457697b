import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Client quotas at work, for scripts/bench_quotas.sh: {@code BOOTSTRAP SECONDS RATE FREE_RATE}.
 *
 * <p>Quotas of RATE bytes a second go on client ids {@code limited-producer} (produce) and
 * {@code limited-consumer} (fetch), and a topic {@code prefill} gets enough records for the
 * limited consumer to read for SECONDS at twice its quota. A producer under no quota ({@code
 * free-producer}) sends at FREE_RATE bytes a second, first alone for SECONDS / 3, then for
 * SECONDS beside the limited producer (sending as fast as it may) and the limited consumer
 * (reading from the first offset).
 *
 * <p>Prints one JSON object: the limited clients' rates in the bytes their quotas count (the
 * producer's request bytes sent, the consumer's response bytes received, from the clients'
 * own {@code outgoing-byte-total} and {@code incoming-byte-total}), over the whole run and
 * over its last SECONDS − 10 (past the burst a quota's first window allows), with their
 * throttle times' average and largest over the run as their own metrics report them; and the
 * free producer's bytes a second acknowledged, alone and beside them.
 */
public final class QuotaBench {
    private static final int VALUE_BYTES = 1000;
    private static final int WARM_UP_SECONDS = 10;

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: BOOTSTRAP SECONDS RATE FREE_RATE");
            System.exit(2);
        }
        String bootstrap = args[0];
        int seconds = Integer.parseInt(args[1]);
        long rate = Long.parseLong(args[2]);
        long freeRate = Long.parseLong(args[3]);
        setUp(bootstrap, rate, 2L * rate * seconds / VALUE_BYTES);

        double freeAlone = freeProducer(bootstrap, seconds / 3, freeRate);
        Map<String, Double> producer = new java.util.concurrent.ConcurrentHashMap<>();
        Map<String, Double> consumer = new java.util.concurrent.ConcurrentHashMap<>();
        Thread limitedProducer = new Thread(() -> limitedProducer(bootstrap, seconds, producer));
        Thread limitedConsumer = new Thread(() -> limitedConsumer(bootstrap, seconds, consumer));
        limitedProducer.start();
        limitedConsumer.start();
        double freeBeside = freeProducer(bootstrap, seconds, freeRate);
        limitedProducer.join();
        limitedConsumer.join();
        StringBuilder json = new StringBuilder("{\"free_alone\":" + freeAlone + ",\"free_beside\":" + freeBeside);
        producer.forEach((key, value) -> json.append(",\"producer_" + key + "\":" + value));
        consumer.forEach((key, value) -> json.append(",\"consumer_" + key + "\":" + value));
        System.out.println(json.append("}"));
    }

    /** The topics, the quotas, and COUNT records in {@code prefill}. */
    private static void setUp(String bootstrap, long rate, long count) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic("prefill", 1, (short) 1), new NewTopic("limited", 1, (short) 1),
                    new NewTopic("free", 1, (short) 1))).all().get();
            admin.alterClientQuotas(List.of(
                    quota("limited-producer", "producer_byte_rate", rate),
                    quota("limited-consumer", "consumer_byte_rate", rate))).all().get();
        }
        byte[] value = new byte[VALUE_BYTES];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                producerProps(bootstrap, "prefill", 1), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (long i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>("prefill", value));
            }
            producer.flush();
        }
    }

    private static ClientQuotaAlteration quota(String clientId, String key, long rate) {
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, clientId));
        return new ClientQuotaAlteration(entity, List.of(new ClientQuotaAlteration.Op(key, (double) rate)));
    }

    /** A producer's settings; its metrics' samples span SECONDS, so they cover a whole run. */
    private static Properties producerProps(String bootstrap, String clientId, int seconds) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "65536");
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        props.put(ProducerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, String.valueOf(seconds * 1000L));
        return props;
    }

    /** Sends FREE_RATE bytes a second for SECONDS; returns the bytes a second acknowledged. */
    private static double freeProducer(String bootstrap, int seconds, long freeRate) throws Exception {
        AtomicLong acked = new AtomicLong();
        byte[] value = new byte[VALUE_BYTES];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                producerProps(bootstrap, "free-producer", seconds), new ByteArraySerializer(),
                new ByteArraySerializer())) {
            long start = System.nanoTime();
            long end = start + Duration.ofSeconds(seconds).toNanos();
            long sent = 0;
            while (System.nanoTime() < end) {
                long due = (long) ((System.nanoTime() - start) / 1e9 * freeRate);
                if (sent >= due) {
                    Thread.sleep(1);
                    continue;
                }
                sent += VALUE_BYTES;
                producer.send(new ProducerRecord<>("free", value), (metadata, error) -> {
                    if (error == null && System.nanoTime() < end) {
                        acked.addAndGet(VALUE_BYTES);
                    }
                });
            }
            return acked.get() / ((System.nanoTime() - start) / 1e9);
        }
    }

    /** Sends as fast as the producer takes records for SECONDS. */
    private static void limitedProducer(String bootstrap, int seconds, Map<String, Double> result) {
        byte[] value = new byte[VALUE_BYTES];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                producerProps(bootstrap, "limited-producer", seconds), new ByteArraySerializer(),
                new ByteArraySerializer())) {
            Span span = new Span(seconds, () -> metric(producer.metrics(), "producer-metrics", "outgoing-byte-total"));
            while (!span.over()) {
                producer.send(new ProducerRecord<>("limited", value));
            }
            span.into(result);
            result.put("throttle_avg_ms", metric(producer.metrics(), "producer-metrics", "produce-throttle-time-avg"));
            result.put("throttle_max_ms", metric(producer.metrics(), "producer-metrics", "produce-throttle-time-max"));
        }
    }

    /** Reads {@code prefill} from its first offset for SECONDS. */
    private static void limitedConsumer(String bootstrap, int seconds, Map<String, Double> result) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "limited-consumer");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "limited");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, String.valueOf(seconds * 1000L));
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("prefill"));
            Span span = new Span(seconds, () -> metric(consumer.metrics(), "consumer-metrics", "incoming-byte-total"));
            while (!span.over()) {
                consumer.poll(Duration.ofMillis(100));
            }
            span.into(result);
            result.put("throttle_avg_ms",
                    metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-avg"));
            result.put("throttle_max_ms",
                    metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-max"));
        }
    }

    /** A timed run of SECONDS, reading a client's byte count at its start, after the warm-up and at its end. */
    private static final class Span {
        private final java.util.function.DoubleSupplier bytes;
        private final long start = System.nanoTime();
        private final long warm;
        private final long end;
        private final double startBytes;
        private double warmBytes = Double.NaN;

        Span(int seconds, java.util.function.DoubleSupplier bytes) {
            this.bytes = bytes;
            this.warm = start + Duration.ofSeconds(WARM_UP_SECONDS).toNanos();
            this.end = start + Duration.ofSeconds(seconds).toNanos();
            this.startBytes = bytes.getAsDouble();
        }

        boolean over() {
            long now = System.nanoTime();
            if (Double.isNaN(warmBytes) && now >= warm) {
                warmBytes = bytes.getAsDouble();
            }
            return now >= end;
        }

        void into(Map<String, Double> result) {
            double endBytes = bytes.getAsDouble();
            double seconds = (end - start) / 1e9;
            result.put("bytes_per_s", (endBytes - startBytes) / seconds);
            result.put("bytes_per_s_after_warm_up", (endBytes - warmBytes) / (seconds - WARM_UP_SECONDS));
        }
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String group, String name) {
        for (Map.Entry<MetricName, ? extends Metric> entry : metrics.entrySet()) {
            MetricName key = entry.getKey();
            if (key.name().equals(name) && key.group().equals(group)) {
                Object value = entry.getValue().metricValue();
                if (value instanceof Double number && !number.isNaN()) {
                    return number;
                }
            }
        }
        return 0.0;
    }
}
