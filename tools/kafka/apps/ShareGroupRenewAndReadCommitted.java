import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Two modes of {@link ShareGroupCheck}, each printing one line of counts.
 *
 * <p>{@code renew BOOTSTRAP GROUP HELD_TOPIC LAPSED_TOPIC COUNT LOCK_MS} (KIP-1222): GROUP is
 * given {@code share.record.lock.duration.ms=LOCK_MS}. Three consumers of the group: the
 * renewer (subscribed to HELD_TOPIC) acquires its COUNT records, the idler (LAPSED_TOPIC)
 * acquires its COUNT records and then never polls again, and only then the bystander
 * (subscribed to both) joins and polls. The renewer acknowledges its records with
 * {@code AcknowledgeType.RENEW} every fifth of the lock duration, until the group's description
 * has shown the bystander sharing both partitions for two and a half lock durations, and then
 * accepts them. The idler's records must lapse to the bystander (delivery count 2), the
 * renewer's never: that the bystander gets none of them is only worth something because it
 * does get the idler's, on the same terms, in the same time. Two topics, because the renewer
 * goes on fetching while it renews: on one partition it could take the lapsed records itself.
 * The renewer then leaves, which would release to the bystander anything of its own not
 * accepted after all. Prints {@code held lock_timeout_ms bystander_shared renewals
 * renew_failed held_ms accepted renewed_redelivered lapsed_redelivered wrong_delivery_count};
 * {@code accepted} counts the records whose accept the commit answered without an error.
 *
 * <p>{@code read_committed BOOTSTRAP GROUP TOPIC}: GROUP is given {@code
 * share.isolation.level=read_committed}, GROUP-uncommitted (the control) keeps Kafka's
 * read_uncommitted. One transactional producer commits five records ("committed-N"), aborts
 * five ("aborted-N") and leaves five open ("open-N"); a second commits five ("behind-N"),
 * written after the open ones, so behind the last stable offset. A consumer of each group reads
 * until the control has seen all twenty, the read_committed one three seconds longer; then the
 * open transaction commits and the read_committed consumer reads on. Prints {@code committed open_before_commit
 * behind_before_commit aborted open behind delivered_twice uncommitted_group_saw}.
 */
final class ShareGroupRenewAndReadCommitted {
    private ShareGroupRenewAndReadCommitted() {}

    static void renew(String bootstrap, String group, String heldTopic, String lapsedTopic, int count, int lockMs)
            throws Exception {
        Map<String, String> lock = Map.of("share.record.lock.duration.ms", Integer.toString(lockMs));
        ShareGroupCheck.createTopic(bootstrap, heldTopic, 1, group, lock);
        ShareGroupCheck.createTopic(bootstrap, lapsedTopic, 1, group, lock);
        produceOneBatch(bootstrap, heldTopic, "held-", count);
        produceOneBatch(bootstrap, lapsedTopic, "lapsed-", count);
        try (KafkaShareConsumer<String, String> idler = consumer(bootstrap, group, "idler", true);
                Admin admin = admin(bootstrap)) {
            Bystander bystander = new Bystander(bootstrap, group, heldTopic, lapsedTopic);
            Holding holding;
            int lockTimeout, accepted;
            long heldMs;
            try (KafkaShareConsumer<String, String> renewer = consumer(bootstrap, group, "renewer", true)) {
                renewer.subscribe(List.of(heldTopic));
                List<ConsumerRecord<String, String>> held = firstRecords(renewer, Duration.ofSeconds(60));
                long acquiredAt = System.nanoTime();
                lockTimeout = renewer.acquisitionLockTimeoutMs().orElse(-1);
                idler.subscribe(List.of(lapsedTopic));
                // Acquired and then left alone: no acknowledgement, no poll, until the end.
                int idled = firstRecords(idler, Duration.ofSeconds(60)).size();
                if (held.size() != count || idled != count) {
                    throw new IllegalStateException("acquired " + held.size() + " and " + idled + " of " + count);
                }
                bystander.start();
                holding = holdByRenewing(renewer, held, admin, group, heldTopic, lapsedTopic, lockMs);
                for (ConsumerRecord<String, String> record : holding.records()) {
                    renewer.acknowledge(record, AcknowledgeType.ACCEPT);
                }
                boolean refused = renewer.commitSync().values().stream().anyMatch(Optional::isPresent);
                accepted = refused ? 0 : holding.records().size();
                heldMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - acquiredAt);
            }
            // The renewer has left: whatever of its records were not accepted after all would be
            // released by its leaving and go to the bystander now.
            Thread.sleep(3000);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline && bystander.lapsed() < count) {
                Thread.sleep(100);
            }
            bystander.finish();
            System.out.println("held=" + count + " lock_timeout_ms=" + lockTimeout
                    + " bystander_shared=" + (holding.shared() ? 1 : 0) + " renewals=" + holding.renewals()
                    + " renew_failed=" + (holding.failed() ? 1 : 0) + " held_ms=" + heldMs + " accepted=" + accepted
                    + " renewed_redelivered=" + bystander.held() + " lapsed_redelivered=" + bystander.lapsed()
                    + " wrong_delivery_count=" + bystander.wrongDeliveryCount.get());
        }
    }

    /** What the renewer holds at the end, whether the bystander was seen sharing both partitions. */
    private record Holding(List<ConsumerRecord<String, String>> records, boolean shared, int renewals, boolean failed) {}

    /**
     * Renews the locks of HELD every fifth of the lock duration until the group's description has
     * shown the bystander sharing both partitions for two and a half lock durations (at most 90
     * seconds).
     */
    private static Holding holdByRenewing(KafkaShareConsumer<String, String> renewer,
            List<ConsumerRecord<String, String>> held, Admin admin, String group, String heldTopic,
            String lapsedTopic, int lockMs) throws Exception {
        Set<TopicPartition> both = Set.of(new TopicPartition(heldTopic, 0), new TopicPartition(lapsedTopic, 0));
        long holdNanos = TimeUnit.MILLISECONDS.toNanos(lockMs * 5L / 2);
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        long sharedSince = 0;
        int renewals = 0;
        while (System.nanoTime() < giveUp) {
            Thread.sleep(lockMs / 5);
            if (sharedSince == 0 && assigned(admin, group, "bystander").containsAll(both)) {
                sharedSince = System.nanoTime();
            }
            if (sharedSince != 0 && System.nanoTime() - sharedSince >= holdNanos) {
                break;
            }
            for (ConsumerRecord<String, String> record : held) {
                renewer.acknowledge(record, AcknowledgeType.RENEW);
            }
            // A renewed record comes back from poll once the broker has renewed its lock.
            List<ConsumerRecord<String, String>> back = renewedRecords(renewer, Duration.ofMillis(lockMs));
            if (back.size() != held.size()) {
                return new Holding(back, sharedSince != 0, renewals, true);
            }
            held = back;
            renewals++;
        }
        return new Holding(held, sharedSince != 0, renewals, false);
    }

    /** The consumer that joins last, subscribed to both topics, accepting what it gets. */
    private static final class Bystander extends Thread {
        private final String bootstrap, group, heldTopic, lapsedTopic;
        private final Map<String, Integer> got = new ConcurrentHashMap<>();
        private final AtomicInteger wrongDeliveryCount = new AtomicInteger();
        private final AtomicBoolean stop = new AtomicBoolean();

        Bystander(String bootstrap, String group, String heldTopic, String lapsedTopic) {
            this.bootstrap = bootstrap;
            this.group = group;
            this.heldTopic = heldTopic;
            this.lapsedTopic = lapsedTopic;
            // A failed run must still end.
            setDaemon(true);
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "bystander", false)) {
                consumer.subscribe(List.of(heldTopic, lapsedTopic));
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                        got.merge(record.value(), 1, Integer::sum);
                        // The idler's acquisition was the first delivery, the lapse gives the second.
                        if (record.topic().equals(lapsedTopic) && record.deliveryCount().orElse((short) -1) != 2) {
                            wrongDeliveryCount.incrementAndGet();
                        }
                    }
                }
            }
        }

        long lapsed() {
            return kind(got, "lapsed-");
        }

        long held() {
            return kind(got, "held-");
        }

        void finish() throws InterruptedException {
            stop.set(true);
            join(30000);
        }
    }

    static void readCommitted(String bootstrap, String group, String topic) throws Exception {
        String control = group + "-uncommitted";
        ShareGroupCheck.createTopic(bootstrap, topic, 1, group, Map.of("share.isolation.level", "read_committed"));
        ShareGroupCheck.createTopic(bootstrap, topic, 1, control, Map.of());
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        Map<String, Integer> controlSeen = new ConcurrentHashMap<>();
        try (KafkaProducer<String, String> first = transactional(bootstrap, topic + "-first");
                KafkaProducer<String, String> second = transactional(bootstrap, topic + "-second");
                KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, "read-committed", false);
                KafkaShareConsumer<String, String> uncommitted = consumer(bootstrap, control, "read-uncommitted", false)) {
            first.initTransactions();
            second.initTransactions();
            first.beginTransaction();
            send(first, topic, "committed-");
            first.commitTransaction();
            first.beginTransaction();
            send(first, topic, "aborted-");
            first.flush();
            first.abortTransaction();
            first.beginTransaction();
            send(first, topic, "open-");
            first.flush();
            second.beginTransaction();
            send(second, topic, "behind-");
            second.commitTransaction();

            consumer.subscribe(List.of(topic));
            uncommitted.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline && (controlSeen.size() < 20 || seen.size() < 5)) {
                pollInto(consumer, seen);
                pollInto(uncommitted, controlSeen);
            }
            long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (System.nanoTime() < settle) {
                pollInto(consumer, seen);
            }
            Map<String, Integer> beforeCommit = Map.copyOf(seen);

            first.commitTransaction();
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline && seen.size() < 15) {
                pollInto(consumer, seen);
            }
            settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (System.nanoTime() < settle) {
                pollInto(consumer, seen);
            }
            long twice = seen.values().stream().filter(times -> times > 1).count();
            System.out.println("committed=" + kind(beforeCommit, "committed-")
                    + " open_before_commit=" + kind(beforeCommit, "open-")
                    + " behind_before_commit=" + kind(beforeCommit, "behind-")
                    + " aborted=" + kind(seen, "aborted-") + " open=" + kind(seen, "open-")
                    + " behind=" + kind(seen, "behind-") + " delivered_twice=" + twice
                    + " uncommitted_group_saw=" + controlSeen.size());
        }
    }

    private static void pollInto(KafkaShareConsumer<String, String> consumer, Map<String, Integer> seen) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
            seen.merge(record.value(), 1, Integer::sum);
        }
    }

    private static long kind(Map<String, Integer> seen, String prefix) {
        return seen.keySet().stream().filter(value -> value.startsWith(prefix)).count();
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String prefix) {
        for (int i = 0; i < 5; i++) {
            producer.send(new ProducerRecord<>(topic, 0, null, prefix + i));
        }
    }

    private static KafkaProducer<String, String> transactional(String bootstrap, String transactionalId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    /**
     * The records of one poll, which returns as soon as it has any (within WAIT). A share fetch
     * acquires whole batches and each topic holds one, so it returns all of them. One poll, not
     * several short ones: each poll that finds nothing asks the consumer's background thread for
     * a fetch, and it goes on fetching until a fetch acquires something; a request left over
     * would have the idler fetch, and take back its own records once their locks lapse.
     */
    private static List<ConsumerRecord<String, String>> firstRecords(
            KafkaShareConsumer<String, String> consumer, Duration wait) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        consumer.poll(wait).forEach(records::add);
        return records;
    }

    /**
     * The renewed records, polled for within WAIT. Short polls: the client hands renewed records
     * back only from a poll that begins after the renewal's answer came, however long an earlier
     * poll waits.
     */
    private static List<ConsumerRecord<String, String>> renewedRecords(
            KafkaShareConsumer<String, String> consumer, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        while (records.isEmpty() && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
        }
        return records;
    }

    /** COUNT records in one batch: the producer sends nothing until the flush. */
    private static void produceOneBatch(String bootstrap, String topic, String prefix, int count) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "60000");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, prefix + i));
            }
            producer.flush();
        }
    }

    /** The partitions the group's description shows assigned to the member with CLIENT_ID. */
    private static Set<TopicPartition> assigned(Admin admin, String group, String clientId) throws Exception {
        var description = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(10, TimeUnit.SECONDS);
        for (ShareMemberDescription member : description.members()) {
            if (member.clientId().equals(clientId)) {
                return member.assignment().topicPartitions();
            }
        }
        return Set.of();
    }

    private static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }

    private static KafkaShareConsumer<String, String> consumer(
            String bootstrap, String group, String clientId, boolean explicit) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        return new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }
}
