import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Share-group consumption for the benchmark (scripts/bench_share.sh), in two steps so the
 * broker's CPU can be measured around the second alone:
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP TOPIC COUNT SIZE}: a topic of one partition with COUNT records
 *       of SIZE bytes;
 *   <li>{@code consume BOOTSTRAP GROUP TOPIC CONSUMERS COUNT}: GROUP starts at the earliest
 *       offset; CONSUMERS share consumers (implicit acknowledgement, one thread each) read until
 *       COUNT records were delivered; prints {"records_per_s":R,"seconds":S,"delivered":N},
 *       timed from the first record delivered to the last.
 * </ul>
 */
public final class ShareBench {
    public static void main(String[] args) throws Exception {
        if (args.length == 5 && args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } else if (args.length == 6 && args[0].equals("consume")) {
            consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]));
        } else {
            System.err.println("usage: produce BOOTSTRAP TOPIC COUNT SIZE | consume BOOTSTRAP GROUP TOPIC CONSUMERS COUNT");
            System.exit(2);
        }
    }

    private static void produce(String bootstrap, String topic, int count, int size) throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "65536");
        byte[] value = new byte[size];
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, value));
            }
            producer.flush();
        }
    }

    private static void consume(String bootstrap, String group, String topic, int consumers, long count)
            throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin client = Admin.create(admin)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp earliest = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            client.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
        }
        AtomicLong delivered = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] threads = new Thread[consumers];
        for (int i = 0; i < consumers; i++) {
            threads[i] = new Thread(() -> {
                Properties props = new Properties();
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                try (KafkaShareConsumer<byte[], byte[]> consumer =
                        new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        int n = consumer.poll(Duration.ofMillis(100)).count();
                        if (n > 0) {
                            first.compareAndSet(0, System.nanoTime());
                            if (delivered.addAndGet(n) >= count) {
                                last.compareAndSet(0, System.nanoTime());
                            }
                        }
                    }
                }
            });
            threads[i].start();
        }
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (last.get() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30000);
        }
        double seconds = (last.get() - first.get()) / 1e9;
        System.out.println("{\"records_per_s\":" + (delivered.get() / seconds) + ",\"seconds\":" + seconds
                + ",\"delivered\":" + delivered.get() + "}");
    }
}
