import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Consumers of Kafka 4's consumer group protocol (group.protocol=consumer), for tests that run
 * the same churn against ferrolog and Kafka.
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP TOPIC PARTITIONS RECORDS SECONDS}: creates the topic and writes
 *       values 0..RECORDS-1 over about SECONDS seconds (idempotent producer).
 *   <li>{@code consume BOOTSTRAP TOPIC GROUP ASSIGNOR INSTANCE [PROTOCOL]}: consumes in GROUP
 *       with the server assignor ASSIGNOR ({@code -} for the broker's default) and, unless
 *       INSTANCE is {@code -}, that group.instance.id. Prints {@code R value} for each record,
 *       flushed, then commits synchronously; commits again before giving partitions up. Runs
 *       until SIGTERM, then closes (leaving the group). With PROTOCOL {@code classic}, it is a
 *       consumer of the classic protocol instead (its default assignors; ASSIGNOR unused).
 *   <li>{@code committed BOOTSTRAP TOPIC GROUP}: prints {@code lag N}, the sum over partitions of
 *       end offset minus committed offset.
 * </ul>
 */
public final class ConsumerProtocolCheck {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Integer.parseInt(args[5]));
            case "consume" -> consume(args[1], args[2], args[3], args[4], args[5],
                args.length > 6 ? args[6] : "consumer");
            case "committed" -> committed(args[1], args[2], args[3]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void produce(String bootstrap, String topic, int partitions, int records, int seconds)
        throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        long pause = Math.max(1, seconds * 1000L / Math.max(1, records / 100));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, Integer.toString(i)));
                if (i % 100 == 99) {
                    producer.flush();
                    Thread.sleep(pause);
                }
            }
            producer.flush();
        }
        System.out.println("produced " + records);
    }

    private static void consume(String bootstrap, String topic, String group, String assignor, String instance,
        String protocol) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (!assignor.equals("-") && protocol.equals("consumer")) {
            props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        }
        if (!instance.equals("-")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        AtomicBoolean running = new AtomicBoolean(true);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.set(false);
            consumer.wakeup();
            try {
                main.join(30_000);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                commit(consumer, processed);
                System.err.println("revoked " + partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                System.err.println("assigned " + partitions);
            }
        });
        try {
            while (running.get()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<String, String> record : records) {
                    out.append("R ").append(record.value()).append('\n');
                    processed.put(new TopicPartition(record.topic(), record.partition()),
                        new OffsetAndMetadata(record.offset() + 1));
                }
                System.out.print(out);
                System.out.flush();
                commit(consumer, processed);
            }
        } catch (WakeupException closing) {
            // SIGTERM: close below.
        } finally {
            commit(consumer, processed);
            consumer.close();
        }
    }

    private static void commit(KafkaConsumer<String, String> consumer, Map<TopicPartition, OffsetAndMetadata> processed) {
        if (processed.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> owned = new HashMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : processed.entrySet()) {
            if (consumer.assignment().contains(entry.getKey())) {
                owned.put(entry.getKey(), entry.getValue());
            }
        }
        processed.clear();
        if (!owned.isEmpty()) {
            consumer.commitSync(owned);
        }
    }

    private static void committed(String bootstrap, String topic, String group) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                .get(topic).partitions().size();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            long lag = 0;
            List<String> behind = new ArrayList<>();
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end : ends.entrySet()) {
                OffsetAndMetadata at = committed.get(end.getKey());
                long gap = end.getValue().offset() - (at == null ? 0 : at.offset());
                lag += gap;
                if (gap != 0) {
                    behind.add(end.getKey() + "=" + gap);
                }
            }
            System.out.println("lag " + lag + " " + behind);
        }
    }
}
