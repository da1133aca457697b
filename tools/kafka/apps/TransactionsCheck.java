import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions of Kafka's Java producer (transactions v2 against a broker that finalizes
 * {@code transaction.version} 2), printing a transcript that must be the same from Kafka and from
 * ferrolog: a commit of records and a group's offset, an abort of both, a producer fenced by a
 * newer instance of its transactional id, a transaction aborted by the coordinator past its
 * timeout, an abort and a commit with nothing sent, then what read_committed and
 * read_uncommitted consumers read and the group's committed offset. Exceptions are printed by
 * class, not message (which names ids and epochs).
 *
 * <p>Usage: {@code TransactionsCheck BOOTSTRAP NAME} (topic NAME, group NAME-group,
 * transactional ids NAME-...).
 */
public final class TransactionsCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String name = args[1];
        String group = name + "-group";
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        TopicPartition partition = new TopicPartition(name, 0);
        ConsumerGroupMetadata groupMetadata = new ConsumerGroupMetadata(group);

        KafkaProducer<String, String> producer = producer(bootstrap, name + "-main", 60000);
        producer.initTransactions();
        producer.beginTransaction();
        for (String value : List.of("commit-1", "commit-2", "commit-3")) {
            producer.send(new ProducerRecord<>(name, 0, null, value));
        }
        producer.sendOffsetsToTransaction(Map.of(partition, new OffsetAndMetadata(2)), groupMetadata);
        producer.commitTransaction();
        say("committed");

        producer.beginTransaction();
        for (String value : List.of("abort-1", "abort-2")) {
            producer.send(new ProducerRecord<>(name, 0, null, value));
        }
        producer.flush();
        producer.sendOffsetsToTransaction(Map.of(partition, new OffsetAndMetadata(4)), groupMetadata);
        producer.abortTransaction();
        say("aborted");
        say("offset after abort " + committed(bootstrap, group, partition));

        // Nothing sent: the producer ends such transactions itself.
        producer.beginTransaction();
        producer.abortTransaction();
        producer.beginTransaction();
        producer.commitTransaction();
        say("empty transactions ended");

        producer.beginTransaction();
        producer.send(new ProducerRecord<>(name, 0, null, "fenced-1"));
        producer.flush();
        KafkaProducer<String, String> successor = producer(bootstrap, name + "-main", 60000);
        successor.initTransactions();
        try {
            producer.commitTransaction();
            say("zombie committed");
        } catch (Exception e) {
            say("zombie commit refused: " + e.getClass().getSimpleName());
        }
        producer.close(Duration.ZERO);
        successor.beginTransaction();
        successor.send(new ProducerRecord<>(name, 0, null, "successor-1"));
        successor.commitTransaction();
        say("successor committed");
        successor.close();

        KafkaProducer<String, String> slow = producer(bootstrap, name + "-slow", 1000);
        slow.initTransactions();
        slow.beginTransaction();
        slow.send(new ProducerRecord<>(name, 0, null, "timed-out-1"));
        slow.flush();
        Thread.sleep(4000);
        try {
            slow.commitTransaction();
            say("timed-out transaction committed");
        } catch (Exception e) {
            say("timed-out commit refused: " + e.getClass().getSimpleName());
        }
        slow.close(Duration.ZERO);

        say("read_committed " + read(bootstrap, name, "read_committed", 4));
        say("read_uncommitted " + read(bootstrap, name, "read_uncommitted", 7));
        say("offset at the end " + committed(bootstrap, group, partition));
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId, int timeoutMs) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        return new KafkaProducer<>(props);
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        return new KafkaConsumer<>(props);
    }

    /** The group's committed offset for the partition, -1 for none. */
    private static long committed(String bootstrap, String group, TopicPartition partition) {
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, group, "read_committed")) {
            OffsetAndMetadata offset = consumer.committed(java.util.Set.of(partition), Duration.ofSeconds(30)).get(partition);
            return offset == null ? -1 : offset.offset();
        }
    }

    /** Every value readable at `isolation`, waiting up to 20 s for `expected` of them. */
    private static List<String> read(String bootstrap, String topic, String isolation, int expected) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, null, isolation)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.currentTimeMillis() + 20_000;
            while (values.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
            long settle = System.currentTimeMillis() + 1000;
            while (System.currentTimeMillis() < settle) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
        }
        return values;
    }
}
