import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A consumer's position checked after the log under it was cut (KIP-320), for tests that cut a
 * broker's log after a SIGKILL and compare what the Java consumer does on ferrolog and Kafka.
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP TOPIC PREFIX COUNT}: creates the one-partition topic if needed
 *       and writes values PREFIX-0..PREFIX-(COUNT-1), one batch each.
 *   <li>{@code consume BOOTSTRAP TOPIC GROUP COUNT RESET}: consumes in GROUP (auto.offset.reset
 *       RESET, no auto-commit) until COUNT records or 30 seconds, printing {@code R offset value}
 *       for each, then commits. A LogTruncationException prints {@code truncated offset} (the
 *       divergent offset the consumer was told) and ends it.
 * </ul>
 */
public final class TruncationCheck {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], args[3], Integer.parseInt(args[4]));
            case "consume" -> consume(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void produce(String bootstrap, String topic, String prefix, int count) throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, prefix + "-" + i)).get();
            }
        }
    }

    private static void consume(String bootstrap, String topic, String group, int count, String reset) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                try {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        System.out.println("R " + record.offset() + " " + record.value());
                        seen++;
                    }
                } catch (LogTruncationException e) {
                    e.divergentOffsets().values().forEach(o -> System.out.println("truncated " + o.offset()));
                    System.out.flush();
                    return;
                }
            }
            System.out.flush();
            consumer.commitSync();
        }
    }
}
