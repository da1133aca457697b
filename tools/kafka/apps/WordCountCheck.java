import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams word count (at-least-once, the default), checked end to end: the Java
 * producer (with its defaults, idempotence included) writes lines, the application counts words
 * through a repartition topic into a state store backed by a changelog topic, and a consumer
 * reads the counts back until every word has its expected final count. Prints one line and
 * exits 0 on success; exits 1 naming what was missing.
 *
 * <p>With PROTOCOL {@code streams}, the application's group speaks Kafka Streams' own protocol
 * (KIP-1071) instead of the classic one, and INSTANCES copies of it (each its own state
 * directory) share the work; once the counts are right, each instance's active and standby
 * tasks are printed, one line per instance, before it closes.
 *
 * <p>Usage: WordCountCheck BOOTSTRAP APPLICATION_ID STATE_DIR [PROTOCOL [INSTANCES]]
 */
public final class WordCountCheck {
    private static final String[] WORDS = {"kafka", "ferrolog", "log", "segment", "offset", "stream"};
    private static final int LINES = 300;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String application = args[1];
        String input = application + "-lines";
        String output = application + "-counts";
        Map<String, Long> expected = new HashMap<>();

        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(input, 2, (short) 1), new NewTopic(output, 2, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
        }

        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int line = 0; line < LINES; line++) {
                StringBuilder text = new StringBuilder();
                for (int word = 0; word <= line % 4; word++) {
                    String chosen = WORDS[(line * 7 + word * 3) % WORDS.length];
                    text.append(chosen).append(' ');
                    expected.merge(chosen, 1L, Long::sum);
                }
                producer.send(new ProducerRecord<>(input, "line-" + line, text.toString().trim()));
            }
            producer.flush();
        }

        String protocol = args.length > 3 ? args[3] : "classic";
        int instances = args.length > 4 ? Integer.parseInt(args[4]) : 1;
        List<KafkaStreams> running = new ArrayList<>();
        for (int instance = 0; instance < instances; instance++) {
            Properties streamsProps = new Properties();
            streamsProps.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
            streamsProps.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            streamsProps.put(StreamsConfig.STATE_DIR_CONFIG, args[2] + "/" + instance);
            streamsProps.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
            streamsProps.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
            streamsProps.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            streamsProps.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
            StreamsBuilder builder = new StreamsBuilder();
            builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> List.of(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
            KafkaStreams streams = new KafkaStreams(builder.build(), streamsProps);
            streams.setUncaughtExceptionHandler(exception -> {
                exception.printStackTrace();
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                    .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
            running.add(streams);
        }

        Map<String, Long> latest = new HashMap<>();
        try {
            Properties consumerProps = new Properties();
            consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, application + "-reader");
            consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(consumerProps)) {
                consumer.subscribe(List.of(output));
                while (!latest.equals(expected) && System.nanoTime() < deadline) {
                    if (running.stream().anyMatch(streams -> streams.state() == KafkaStreams.State.ERROR
                            || streams.state() == KafkaStreams.State.NOT_RUNNING)) {
                        break;
                    }
                    for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                        latest.put(record.key(), record.value());
                    }
                }
            }
            if (instances > 1) {
                printTasks(running);
                printGroup(bootstrap, application);
            }
        } finally {
            for (KafkaStreams streams : running) {
                streams.close(Duration.ofSeconds(30));
            }
        }
        if (!latest.equals(expected)) {
            System.out.println("counts " + latest + ", expected " + expected);
            System.exit(1);
        }
        List<String> words = new ArrayList<>(expected.keySet());
        java.util.Collections.sort(words);
        long total = expected.values().stream().mapToLong(Long::longValue).sum();
        System.out.println("word count: " + words.size() + " words, " + total + " counted, every final count right");
    }

    /**
     * The group as the broker describes it (StreamsGroupDescribe), once it is Stable: its state,
     * member count, assignor and topology (each subtopology's topics, the internal ones with
     * their partition counts), and for each member whether it has reached the group's epoch and
     * holds its target.
     */
    private static void printGroup(String bootstrap, String application) throws Exception {
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            org.apache.kafka.clients.admin.StreamsGroupDescription group;
            do {
                group = admin.describeStreamsGroups(List.of(application)).all().get(30, TimeUnit.SECONDS)
                    .get(application);
            } while (group.groupState() != org.apache.kafka.common.GroupState.STABLE
                && System.nanoTime() < deadline && sleep());
            System.out.println("group " + group.groupId() + ": " + group.groupState() + ", "
                + group.members().size() + " members, assignor " + group.assignorName().orElse("?")
                + ", target at the group epoch: " + (group.targetAssignmentEpoch() == group.groupEpoch()));
            List<org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription> subtopologies =
                new ArrayList<>(group.subtopologies());
            subtopologies.sort(java.util.Comparator.comparing(
                org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription::subtopologyId));
            for (var subtopology : subtopologies) {
                System.out.println("subtopology " + subtopology.subtopologyId()
                    + ": sources " + new java.util.TreeSet<>(subtopology.sourceTopics())
                    + ", repartition sinks " + new java.util.TreeSet<>(subtopology.repartitionSinkTopics())
                    + ", repartition sources " + partitionCounts(subtopology.repartitionSourceTopics())
                    + ", changelogs " + partitionCounts(subtopology.stateChangelogTopics()));
            }
            for (var member : group.members()) {
                System.out.println("member: epoch at the group's " + (member.memberEpoch() == group.groupEpoch())
                    + ", holds its target " + member.assignment().equals(member.targetAssignment())
                    + ", " + member.assignment().activeTasks().stream().mapToInt(t -> t.partitions().size()).sum()
                    + " active tasks");
            }
        }
    }

    private static java.util.TreeMap<String, Integer> partitionCounts(
            Map<String, org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription.TopicInfo> topics) {
        java.util.TreeMap<String, Integer> counts = new java.util.TreeMap<>();
        topics.forEach((name, info) -> counts.put(name, info.partitions()));
        return counts;
    }

    private static boolean sleep() throws InterruptedException {
        Thread.sleep(200);
        return true;
    }

    /**
     * Each instance's tasks once the group has settled (every task active somewhere, each once):
     * "instance N: active [..] standby [..]", waiting up to 30 s for the assignment to settle.
     */
    private static void printTasks(List<KafkaStreams> running) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        List<List<String>> active = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            active.clear();
            List<String> all = new ArrayList<>();
            for (KafkaStreams streams : running) {
                List<String> mine = new ArrayList<>();
                streams.metadataForLocalThreads().forEach(thread ->
                    thread.activeTasks().forEach(task -> mine.add(task.taskId().toString())));
                java.util.Collections.sort(mine);
                active.add(mine);
                all.addAll(mine);
            }
            if (all.size() == 4 && all.stream().distinct().count() == 4
                    && active.stream().noneMatch(List::isEmpty)) {
                break;
            }
            Thread.sleep(200);
        }
        for (int instance = 0; instance < active.size(); instance++) {
            System.out.println("instance " + instance + ": active " + active.get(instance));
        }
    }
}
