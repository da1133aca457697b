import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
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
 * A Kafka Streams word count of Kafka Streams' own group protocol (KIP-1071), in steps a test
 * drives from outside, so instances can be started, stopped and SIGKILLed as processes:
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP APP FROM COUNT}: lines FROM to FROM+COUNT-1 into APP-lines
 *       (4 partitions; APP-counts has 2), created if missing;
 *   <li>{@code run BOOTSTRAP APP STATE_DIR GUARANTEE}: one instance, with the processing
 *       guarantee given ({@code at_least_once} or {@code exactly_once_v2}); prints "running"
 *       once it runs, and closes when its standard input ends;
 *   <li>{@code verify BOOTSTRAP APP LINES SECONDS}: reads APP-counts (read_committed) until the
 *       latest count of each word is its count over lines 0 to LINES-1; prints "counts right"
 *       with the totals, or the counts read and exits 1;
 *   <li>{@code describe BOOTSTRAP APP MEMBERS SECONDS}: the group as StreamsGroupDescribe
 *       gives it once Stable with MEMBERS members (or when the time is up): state, epochs,
 *       assignor, topology with the internal topics' partitions, each member's tasks.
 * </ul>
 */
public final class StreamsGroupCheck {
    private static final String[] WORDS = {"kafka", "ferrolog", "log", "segment", "offset", "stream"};

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "run" -> run(args[1], args[2], args[3], args[4]);
            case "verify" -> verify(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "describe" -> describe(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            default -> throw new IllegalArgumentException("unknown step " + args[0]);
        }
    }

    private static String line(int index) {
        StringBuilder text = new StringBuilder();
        for (int word = 0; word <= index % 4; word++) {
            text.append(WORDS[(index * 7 + word * 3) % WORDS.length]).append(' ');
        }
        return text.toString().trim();
    }

    private static void produce(String bootstrap, String app, int from, int count) throws Exception {
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            for (NewTopic topic : List.of(new NewTopic(app + "-lines", 4, (short) 1),
                    new NewTopic(app + "-counts", 2, (short) 1))) {
                try {
                    admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int index = from; index < from + count; index++) {
                producer.send(new ProducerRecord<>(app + "-lines", "line-" + index, line(index)));
            }
            producer.flush();
        }
    }

    private static void run(String bootstrap, String app, String stateDir, String guarantee) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(app + "-lines", Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(text -> List.of(text.split(" ")))
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("word-counts"))
            .toStream()
            .to(app + "-counts", Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("running");
                System.out.flush();
            }
        });
        streams.start();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        while (stdin.readLine() != null) {
            // Runs until the test closes the pipe.
        }
        streams.close(Duration.ofSeconds(30));
    }

    private static void verify(String bootstrap, String app, int lines, int seconds) throws Exception {
        Map<String, Long> expected = new TreeMap<>();
        for (int index = 0; index < lines; index++) {
            for (String word : line(index).split(" ")) {
                expected.merge(word, 1L, Long::sum);
            }
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
        Map<String, Long> latest = new TreeMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = List.of(
                new TopicPartition(app + "-counts", 0), new TopicPartition(app + "-counts", 1));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (!latest.equals(expected) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(record.key(), record.value());
                }
            }
        }
        if (!latest.equals(expected)) {
            System.out.println("counts " + latest + ", expected " + expected);
            System.exit(1);
        }
        long total = expected.values().stream().mapToLong(Long::longValue).sum();
        System.out.println("counts right: " + expected.size() + " words, " + total + " counted over " + lines + " lines");
    }

    private static void describe(String bootstrap, String app, int members, int seconds) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            StreamsGroupDescription group = admin.describeStreamsGroups(List.of(app)).all()
                .get(30, TimeUnit.SECONDS).get(app);
            while ((group.groupState() != GroupState.STABLE || group.members().size() != members)
                    && System.nanoTime() < deadline) {
                Thread.sleep(200);
                group = admin.describeStreamsGroups(List.of(app)).all().get(30, TimeUnit.SECONDS).get(app);
            }
            System.out.println("group " + group.groupId() + ": " + group.groupState() + ", "
                + group.members().size() + " members, assignor " + group.assignorName().orElse("?")
                + ", group epoch " + group.groupEpoch() + ", target epoch " + group.targetAssignmentEpoch()
                + ", topology epoch " + group.topologyEpoch());
            List<StreamsGroupSubtopologyDescription> subtopologies = new ArrayList<>(group.subtopologies());
            subtopologies.sort(Comparator.comparing(StreamsGroupSubtopologyDescription::subtopologyId));
            for (StreamsGroupSubtopologyDescription subtopology : subtopologies) {
                System.out.println("subtopology " + subtopology.subtopologyId()
                    + ": sources " + new TreeSet<>(subtopology.sourceTopics())
                    + ", repartition sinks " + new TreeSet<>(subtopology.repartitionSinkTopics())
                    + ", repartition sources " + partitions(subtopology.repartitionSourceTopics())
                    + ", changelogs " + partitions(subtopology.stateChangelogTopics()));
            }
            List<String> lines = new ArrayList<>();
            for (StreamsGroupMemberDescription member : group.members()) {
                lines.add("member " + member.memberId() + ": epoch " + member.memberEpoch()
                    + ", process " + member.processId() + ", active " + tasks(member.assignment().activeTasks())
                    + ", target " + tasks(member.targetAssignment().activeTasks()));
            }
            lines.sort(null);
            lines.forEach(System.out::println);
        }
    }

    private static TreeMap<String, Integer> partitions(
            Map<String, StreamsGroupSubtopologyDescription.TopicInfo> topics) {
        TreeMap<String, Integer> counts = new TreeMap<>();
        topics.forEach((name, info) -> counts.put(name, info.partitions()));
        return counts;
    }

    private static TreeSet<String> tasks(
            List<org.apache.kafka.clients.admin.StreamsGroupMemberAssignment.TaskIds> ids) {
        TreeSet<String> tasks = new TreeSet<>();
        for (var id : ids) {
            for (int partition : id.partitions()) {
                tasks.add(id.subtopologyId() + "_" + partition);
            }
        }
        return tasks;
    }
}
