import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Share consumers (KIP-932) of one group reading a topic while a producer writes to it:
 * {@code run BOOTSTRAP GROUP TOPIC PARTITIONS CONSUMERS COUNT SECONDS MODE}.
 *
 * <p>GROUP is given {@code share.auto.offset.reset=earliest}; CONSUMERS {@code
 * KafkaShareConsumer}s join it and poll; once each has polled, COUNT records ("r0" to
 * "rCOUNT-1") are produced into TOPIC (made with PARTITIONS partitions if missing). MODE {@code implicit} accepts every record by polling again; {@code explicit}
 * accepts each record but releases every 7th at its first delivery (it must come back with a
 * delivery count of 2) and rejects every 13th (it must never come back). The run ends when
 * every record is done or SECONDS pass, and prints one line of counts:
 * {@code produced accepted accepted_twice rejected redelivered_released rejected_redelivered
 * wrong_delivery_count consumers_with_records}.
 *
 * <p>{@code produce BOOTSTRAP TOPIC FROM COUNT} produces "rFROM" to "rFROM+COUNT-1" (keyed by
 * number); {@code drain BOOTSTRAP GROUP TOPIC CONSUMERS EXPECTED SECONDS} runs CONSUMERS
 * consumers accepting every record until EXPECTED distinct records are accepted or SECONDS
 * pass, and prints {@code accepted min max accepted_twice}.
 *
 * <p>{@code limited BOOTSTRAP GROUP TOPIC COUNT LIMIT}: two consumers with {@code
 * share.acquire.mode=record_limit} and {@code max.poll.records=LIMIT} (KIP-1206) accept COUNT
 * produced records; prints {@code accepted accepted_twice largest_poll}.
 *
 * <p>{@code durable BOOTSTRAP GROUP TOPIC CONSUMERS COUNT SECONDS} produces COUNT records, then
 * CONSUMERS consumers accept each record explicitly and commit; a record counts as confirmed
 * once its partition's commit succeeded. It prints "halfway" once a third are confirmed (the
 * test then kills the broker and starts it again), goes on through the broker's absence, and
 * ends when all are confirmed or SECONDS pass, printing {@code confirmed
 * redelivered_after_confirm}: a record delivered again after its acknowledgement was confirmed.
 *
 * <p>{@code renew} (a consumer keeps its records past the lock duration by renewing their locks,
 * KIP-1222) and {@code read_committed} (a group with {@code share.isolation.level=read_committed}
 * under committed, aborted and open transactions) are described in {@link
 * ShareGroupRenewAndReadCommitted}.
 */
public final class ShareGroupCheck {
    public static void main(String[] args) throws Exception {
        if (args.length == 5 && args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            return;
        }
        if (args.length == 7 && args[0].equals("drain")) {
            drain(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            return;
        }
        if (args.length == 6 && args[0].equals("limited")) {
            limited(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            return;
        }
        if (args.length == 7 && args[0].equals("durable")) {
            durable(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            return;
        }
        if (args.length == 7 && args[0].equals("renew")) {
            ShareGroupRenewAndReadCommitted.renew(args[1], args[2], args[3], args[4], Integer.parseInt(args[5]),
                    Integer.parseInt(args[6]));
            return;
        }
        if (args.length == 4 && args[0].equals("read_committed")) {
            ShareGroupRenewAndReadCommitted.readCommitted(args[1], args[2], args[3]);
            return;
        }
        if (args.length != 9 || !args[0].equals("run")) {
            System.err.println("usage: run BOOTSTRAP GROUP TOPIC PARTITIONS CONSUMERS COUNT SECONDS MODE");
            System.exit(2);
        }
        String bootstrap = args[1], group = args[2], topic = args[3];
        int partitions = Integer.parseInt(args[4]), consumers = Integer.parseInt(args[5]);
        int count = Integer.parseInt(args[6]), seconds = Integer.parseInt(args[7]);
        boolean explicit = args[8].equals("explicit");
        createTopic(bootstrap, topic, partitions, group);

        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        Map<String, Integer> deliveries = new ConcurrentHashMap<>();
        AtomicInteger rejected = new AtomicInteger();
        AtomicInteger redelivered = new AtomicInteger();
        AtomicInteger rejectedAgain = new AtomicInteger();
        AtomicInteger wrongCount = new AtomicInteger();
        AtomicInteger withRecords = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch polled = new CountDownLatch(consumers);
        Thread[] threads = new Thread[consumers];
        for (int i = 0; i < consumers; i++) {
            threads[i] = new Thread(() -> {
                boolean got = false;
                try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, explicit)) {
                    consumer.subscribe(List.of(topic));
                    boolean first = true;
                    while (!stop.get()) {
                        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                        if (first) {
                            polled.countDown();
                            first = false;
                        }
                        for (ConsumerRecord<String, String> record : records) {
                            got = true;
                            String value = record.value();
                            int n = Integer.parseInt(value.substring(1));
                            int times = deliveries.merge(value, 1, Integer::sum);
                            short deliveryCount = record.deliveryCount().orElse((short) -1);
                            if (deliveryCount != times) {
                                wrongCount.incrementAndGet();
                            }
                            if (!explicit) {
                                accepted.merge(value, 1, Integer::sum);
                            } else if (n % 13 == 0) {
                                if (times > 1) {
                                    rejectedAgain.incrementAndGet();
                                } else {
                                    rejected.incrementAndGet();
                                }
                                consumer.acknowledge(record, AcknowledgeType.REJECT);
                            } else if (n % 7 == 0 && times == 1) {
                                consumer.acknowledge(record, AcknowledgeType.RELEASE);
                            } else {
                                if (n % 7 == 0) {
                                    redelivered.incrementAndGet();
                                }
                                accepted.merge(value, 1, Integer::sum);
                                consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                            }
                        }
                        if (explicit && !records.isEmpty()) {
                            consumer.commitSync();
                        }
                    }
                } finally {
                    if (got) {
                        withRecords.incrementAndGet();
                    }
                    polled.countDown();
                }
            });
            threads[i].start();
        }
        polled.await(60, TimeUnit.SECONDS);
        produce(bootstrap, topic, 0, count);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        int expectRejected = explicit ? (count + 12) / 13 : 0;
        while (System.nanoTime() < deadline) {
            if (accepted.size() + rejected.get() >= count && rejected.get() >= expectRejected) {
                break;
            }
            Thread.sleep(100);
        }
        // A little longer, for anything delivered twice to show.
        Thread.sleep(1000);
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30000);
        }
        long twice = accepted.values().stream().filter(times -> times > 1).count();
        System.out.println("produced=" + count + " accepted=" + accepted.size() + " accepted_twice=" + twice
                + " rejected=" + rejected.get() + " redelivered_released=" + redelivered.get()
                + " rejected_redelivered=" + rejectedAgain.get() + " wrong_delivery_count=" + wrongCount.get()
                + " consumers_with_records=" + withRecords.get());
    }

    private static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, boolean explicit) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        return new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    private static void createTopic(String bootstrap, String topic, int partitions, String group) throws Exception {
        createTopic(bootstrap, topic, partitions, group, Map.of());
    }

    /** As above, with GROUP_CONFIGS set on the group too. */
    static void createTopic(String bootstrap, String topic, int partitions, String group,
            Map<String, String> groupConfigs) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> ops = new java.util.ArrayList<>();
            ops.add(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET));
            groupConfigs.forEach((name, value) ->
                    ops.add(new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
    }

    private static void limited(String bootstrap, String group, String topic, int count, int limit)
            throws Exception {
        createTopic(bootstrap, topic, 1, group);
        produce(bootstrap, topic, 0, count);
        Map<Integer, Integer> accepted = new ConcurrentHashMap<>();
        AtomicInteger largest = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] threads = new Thread[2];
        for (int i = 0; i < threads.length; i++) {
            threads[i] = new Thread(() -> {
                Properties props = new Properties();
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                props.put("share.acquire.mode", "record_limit");
                props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(limit));
                try (KafkaShareConsumer<String, String> consumer =
                        new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                        largest.accumulateAndGet(records.count(), Math::max);
                        for (ConsumerRecord<String, String> record : records) {
                            accepted.merge(Integer.parseInt(record.value().substring(1)), 1, Integer::sum);
                        }
                    }
                }
            });
            threads[i].start();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline && accepted.size() < count) {
            Thread.sleep(50);
        }
        Thread.sleep(1000);
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30000);
        }
        long twice = accepted.values().stream().filter(times -> times > 1).count();
        System.out.println("accepted=" + accepted.size() + " accepted_twice=" + twice + " largest_poll=" + largest.get());
    }

    private static void durable(String bootstrap, String group, String topic, int consumers, int count, int seconds)
            throws Exception {
        createTopic(bootstrap, topic, 2, group);
        produce(bootstrap, topic, 0, count);
        Map<Integer, Boolean> confirmed = new ConcurrentHashMap<>();
        AtomicInteger redeliveredAfterConfirm = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] threads = new Thread[consumers];
        for (int i = 0; i < consumers; i++) {
            threads[i] = new Thread(() -> {
                try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, true)) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        try {
                            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                            Map<Integer, List<Integer>> byPartition = new java.util.HashMap<>();
                            for (ConsumerRecord<String, String> record : records) {
                                int n = Integer.parseInt(record.value().substring(1));
                                if (confirmed.containsKey(n)) {
                                    redeliveredAfterConfirm.incrementAndGet();
                                }
                                byPartition.computeIfAbsent(record.partition(), p -> new java.util.ArrayList<>()).add(n);
                                consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                            }
                            if (records.isEmpty()) {
                                continue;
                            }
                            var results = consumer.commitSync();
                            for (var result : results.entrySet()) {
                                if (result.getValue().isEmpty()) {
                                    for (int n : byPartition.getOrDefault(result.getKey().partition(), List.of())) {
                                        confirmed.put(n, true);
                                    }
                                }
                            }
                        } catch (org.apache.kafka.common.KafkaException e) {
                            // The broker is away: go on polling.
                        }
                    }
                }
            });
            threads[i].start();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        boolean halfway = false;
        while (System.nanoTime() < deadline && confirmed.size() < count) {
            if (!halfway && confirmed.size() >= count / 3) {
                System.out.println("halfway");
                System.out.flush();
                halfway = true;
            }
            Thread.sleep(20);
        }
        Thread.sleep(1000);
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30000);
        }
        System.out.println("confirmed=" + confirmed.size() + " redelivered_after_confirm=" + redeliveredAfterConfirm.get());
    }

    private static void drain(String bootstrap, String group, String topic, int consumers, int expected, int seconds)
            throws Exception {
        Map<Integer, Integer> accepted = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] threads = new Thread[consumers];
        for (int i = 0; i < consumers; i++) {
            threads[i] = new Thread(() -> {
                try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, false)) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                            accepted.merge(Integer.parseInt(record.value().substring(1)), 1, Integer::sum);
                        }
                    }
                }
            });
            threads[i].start();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline && accepted.size() < expected) {
            Thread.sleep(100);
        }
        Thread.sleep(1000);
        stop.set(true);
        for (Thread thread : threads) {
            thread.join(30000);
        }
        int min = accepted.keySet().stream().min(Integer::compare).orElse(-1);
        int max = accepted.keySet().stream().max(Integer::compare).orElse(-1);
        long twice = accepted.values().stream().filter(times -> times > 1).count();
        System.out.println("accepted=" + accepted.size() + " min=" + min + " max=" + max + " accepted_twice=" + twice);
    }

    private static void produce(String bootstrap, String topic, int from, int count) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = from; i < from + count; i++) {
                producer.send(new ProducerRecord<>(topic, Integer.toString(i), "r" + i));
            }
            producer.flush();
        }
    }
}
