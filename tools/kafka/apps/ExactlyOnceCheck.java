import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Exactly-once processing with Kafka's Java clients, checked exactly. An input topic holds
 * COUNT records, keys {@code k0}..{@code k9} in turn, values {@code 0}..{@code COUNT-1}:
 *
 * <ul>
 *   <li>{@code streams}: a Kafka Streams application with {@code exactly_once_v2} counts the
 *       records per key, its state store's cache off so every update goes out: with exactly-once
 *       processing the output holds, per key, the counts 1, 2, 3... once each and in order, however
 *       often the application or the broker is killed;
 *   <li>{@code loop}: a consume-transform-produce loop with the plain clients (a read_committed
 *       consumer in a group, a transactional producer sending the consumer's positions in each
 *       transaction) copies every value to the output, where each must appear exactly once.
 * </ul>
 *
 * <p>Usage: {@code ExactlyOnceCheck produce BOOTSTRAP NAME COUNT SECONDS} writes the input (the
 * Java producer with its defaults, idempotent), paced over SECONDS;
 * {@code ExactlyOnceCheck streams|loop BOOTSTRAP NAME STATE_DIR [PROTOCOL]} runs until killed,
 * its group on PROTOCOL ({@code classic}, the default; {@code streams} for the application,
 * {@code consumer} for the loop);
 * {@code ExactlyOnceCheck check-streams|check-loop BOOTSTRAP NAME COUNT} reads the output
 * (read_committed) until it is complete or 120 s pass, prints one line and exits 0 when it is
 * exactly right, 1 naming the first thing wrong.
 */
public final class ExactlyOnceCheck {
    private static final int KEYS = 10;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String name = args[2];
        switch (mode) {
            case "produce" -> produce(bootstrap, name, Integer.parseInt(args[3]), Double.parseDouble(args[4]));
            case "streams" -> streams(bootstrap, name, args[3], args.length > 4 ? args[4] : "classic");
            case "loop" -> loop(bootstrap, name, args.length > 4 ? args[4] : "classic");
            case "check-streams" -> System.exit(checkStreams(bootstrap, name, Integer.parseInt(args[3])));
            case "check-loop" -> System.exit(checkLoop(bootstrap, name, Integer.parseInt(args[3])));
            default -> throw new IllegalArgumentException(mode);
        }
    }

    private static String input(String name) {
        return name + "-input";
    }

    private static String output(String name) {
        return name + "-output";
    }

    private static void produce(String bootstrap, String name, int count, double seconds) throws Exception {
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(input(name), 2, (short) 1), new NewTopic(output(name), 2, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
        long started = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(input(name), "k" + (i % KEYS), Integer.toString(i)), (metadata, error) -> {
                    if (error != null) {
                        failed.compareAndSet(null, error);
                    }
                });
                // Paced over `seconds`, so that the applications work while things are killed.
                long due = started + (long) (seconds * 1e9 * i / count);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
            }
            producer.flush();
        }
        if (failed.get() != null) {
            System.out.println("a record was not written: " + failed.get());
            System.exit(1);
        }
        System.out.println("produced " + count);
    }

    private static void streams(String bootstrap, String name, String stateDir, String protocol) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 5000);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            // Streams' own protocol takes its session timeout from the broker.
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input(name), Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .to(output(name), Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        Thread.sleep(Long.MAX_VALUE);
    }

    private static void loop(String bootstrap, String name, String protocol) {
        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, name + "-loop");
        consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerProps.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            // The consumer protocol takes its session timeout from the broker.
            consumerProps.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
        }
        consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, name + "-loop-txn");
        producerProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 5000);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps);
             KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.initTransactions();
            consumer.subscribe(List.of(input(name)));
            while (true) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                for (ConsumerRecord<String, String> record : records) {
                    producer.send(new ProducerRecord<>(output(name), record.key(), record.value()));
                    positions.put(new TopicPartition(record.topic(), record.partition()),
                        new OffsetAndMetadata(record.offset() + 1));
                }
                producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                producer.commitTransaction();
            }
        }
    }

    private static KafkaConsumer<String, byte[]> reader(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return new KafkaConsumer<>(props);
    }

    /** The records of the output, read_committed, until `complete` says so or 120 s pass. */
    private static List<ConsumerRecord<String, byte[]>> readOutput(String bootstrap, String name,
            java.util.function.Predicate<List<ConsumerRecord<String, byte[]>>> complete) {
        List<ConsumerRecord<String, byte[]>> all = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = reader(bootstrap)) {
            List<TopicPartition> partitions = List.of(new TopicPartition(output(name), 0), new TopicPartition(output(name), 1));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.currentTimeMillis() + 120_000;
            while (System.currentTimeMillis() < deadline && !complete.test(all)) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    all.add(record);
                }
            }
            // Anything more (a duplicate) shows within a second.
            long settle = System.currentTimeMillis() + 1000;
            while (System.currentTimeMillis() < settle) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    all.add(record);
                }
            }
        }
        return all;
    }

    private static int checkStreams(String bootstrap, String name, int count) {
        long perKey = count / KEYS;
        // Counts are longs: decode the value bytes the Streams app wrote.
        Map<String, List<Long>> counts = new HashMap<>();
        LongDeserializer longs = new LongDeserializer();
        List<ConsumerRecord<String, byte[]>> records = readOutput(bootstrap, name, all -> {
            Map<String, Long> last = new HashMap<>();
            for (ConsumerRecord<String, byte[]> record : all) {
                last.put(record.key(), longs.deserialize(null, record.value()));
            }
            return last.size() == KEYS && last.values().stream().allMatch(v -> v == perKey);
        });
        for (ConsumerRecord<String, byte[]> record : records) {
            long value = longs.deserialize(null, record.value());
            counts.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(value);
        }
        for (int k = 0; k < KEYS; k++) {
            List<Long> seen = counts.getOrDefault("k" + k, List.of());
            for (int i = 0; i < seen.size(); i++) {
                if (seen.get(i) != i + 1) {
                    System.out.println("k" + k + ": update " + (i + 1) + " is " + seen.get(i) + " (" + seen + ")");
                    return 1;
                }
            }
            if (seen.size() != perKey) {
                System.out.println("k" + k + ": " + seen.size() + " updates, not " + perKey);
                return 1;
            }
        }
        System.out.println("every count exactly once: " + records.size() + " updates");
        return 0;
    }

    private static int checkLoop(String bootstrap, String name, int count) {
        List<ConsumerRecord<String, byte[]>> records = readOutput(bootstrap, name, all -> all.size() >= count);
        Set<String> seen = new HashSet<>();
        for (ConsumerRecord<String, byte[]> record : records) {
            String value = new String(record.value(), java.nio.charset.StandardCharsets.UTF_8);
            if (!seen.add(value)) {
                System.out.println("value " + value + " copied twice");
                return 1;
            }
        }
        for (int i = 0; i < count; i++) {
            if (!seen.contains(Integer.toString(i))) {
                System.out.println("value " + i + " missing (" + seen.size() + " copied)");
                return 1;
            }
        }
        System.out.println("every value exactly once: " + records.size() + " copies");
        return 0;
    }
}
