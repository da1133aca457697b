import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * How long a group of Kafka's Java consumers takes to reach a stable assignment after a member
 * joins and after one leaves.
 *
 * <p>{@code BOOTSTRAP TOPIC PARTITIONS PROTOCOL MEMBERS ROUNDS [HEARTBEAT_MS]}: creates TOPIC with PARTITIONS
 * partitions, starts MEMBERS consumers of group.protocol PROTOCOL ({@code consumer}: the
 * broker's default assignor; {@code classic}: the client's default assignors) in one group, each
 * polling on its own thread, and waits until the group is stable: every partition owned by
 * exactly one member, as the members' rebalance listeners report it, and every member owning
 * within one partition of every other. Then, ROUNDS times: one more member starts (timed from
 * its subscribe to the next stable assignment), and one member closes, leaving the group (timed
 * from its close to the next stable assignment of the rest). HEARTBEAT_MS, for the classic
 * protocol only, is the client's {@code heartbeat.interval.ms} (a consumer-protocol member takes
 * its interval from the broker).
 *
 * <p>Prints one JSON line: the milliseconds to the first stable assignment, and each round's
 * join and leave times.
 */
public final class GroupRebalanceBench {
    /** One consumer on its own thread, with the partitions it owns as its listener saw them. */
    private static final class Member implements Runnable {
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final String topic;
        private final Thread thread;
        private volatile boolean running = true;

        Member(Properties props, String topic) {
            this.consumer = new KafkaConsumer<>(props);
            this.topic = topic;
            this.thread = new Thread(this);
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    partitions.forEach(p -> owned.remove(p.partition()));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    partitions.forEach(p -> owned.add(p.partition()));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    partitions.forEach(p -> owned.remove(p.partition()));
                }
            });
            try {
                while (running) {
                    consumer.poll(Duration.ofMillis(20));
                }
            } catch (WakeupException stopping) {
                // close() below leaves the group.
            } finally {
                owned.clear();
                consumer.close();
            }
        }

        void stop() {
            running = false;
            consumer.wakeup();
        }

        void join() throws InterruptedException {
            thread.join();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        String protocol = args[3];
        int size = Integer.parseInt(args[4]);
        int rounds = Integer.parseInt(args[5]);
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-" + protocol);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        if (args.length > 6 && protocol.equals("classic")) {
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Integer.parseInt(args[6]));
        }
        List<Member> members = new ArrayList<>();
        long started = System.nanoTime();
        for (int i = 0; i < size; i++) {
            Member member = new Member(props, topic);
            members.add(member);
            member.start();
        }
        long initial = untilStable(members, partitions, started);
        List<Long> joins = new ArrayList<>();
        List<Long> leaves = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            Member newcomer = new Member(props, topic);
            members.add(newcomer);
            long joined = System.nanoTime();
            newcomer.start();
            joins.add(untilStable(members, partitions, joined));
            Member leaving = members.remove(0);
            long left = System.nanoTime();
            leaving.stop();
            leaves.add(untilStable(members, partitions, left));
            leaving.join();
        }
        for (Member member : members) {
            member.stop();
        }
        for (Member member : members) {
            member.join();
        }
        System.out.println("{\"protocol\": \"" + protocol + "\", \"members\": " + size
            + ", \"initial_ms\": " + initial + ", \"join_ms\": " + joins + ", \"leave_ms\": " + leaves + "}");
    }

    /** Milliseconds from {@code since} until the members' assignment is stable (at most 5 minutes). */
    private static long untilStable(List<Member> members, int partitions, long since) throws InterruptedException {
        long deadline = since + TimeUnit.MINUTES.toNanos(5);
        while (!stable(members, partitions)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no stable assignment within 5 minutes");
            }
            Thread.sleep(2);
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
    }

    private static boolean stable(List<Member> members, int partitions) {
        int[] owners = new int[partitions];
        int least = Integer.MAX_VALUE;
        int most = 0;
        for (Member member : members) {
            Set<Integer> owned = Set.copyOf(member.owned);
            least = Math.min(least, owned.size());
            most = Math.max(most, owned.size());
            for (int partition : owned) {
                owners[partition]++;
            }
        }
        for (int count : owners) {
            if (count != 1) {
                return false;
            }
        }
        return most - least <= 1;
    }
}
