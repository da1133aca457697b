import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/**
 * The Java Admin client changing and reading configs, for a test that runs the same steps
 * against ferrolog and Kafka and compares what this prints: broker configs for the broker and
 * the cluster default (incremental changes, a refusal, a description with synonyms), a topic's
 * configs, client quotas with match filters, a broker logger, and a client-metrics
 * subscription. Each step prints one line per result, or the refusal's class and message.
 *
 * <p>Argument: the bootstrap address.
 */
public final class AdminConfigsCheck {
    /** The broker keys whose descriptions are compared (both brokers have them). */
    private static final Set<String> BROKER_KEYS = Set.of(
        "log.retention.ms", "log.segment.bytes", "log.cleaner.threads",
        "max.connection.creation.rate", "message.max.bytes", "compression.type");

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            brokerConfigs(admin);
            topicConfigs(admin);
            quotas(admin);
            loggersAndMetrics(admin);
        }
    }

    private static void brokerConfigs(Admin admin) throws Exception {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "0");
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        alter("broker", admin, broker, set("log.retention.ms", "3600000"),
            set("log.cleaner.threads", "2"), set("max.connection.creation.rate", "1000"));
        alter("cluster", admin, cluster, set("log.segment.bytes", "2097152"),
            set("compression.type", "lz4"));
        alter("not dynamic", admin, broker, set("log.dirs", "/elsewhere"));
        alter("wrong type", admin, broker, set("message.max.bytes", "many"));
        alter("threads", admin, broker, set("log.cleaner.threads", "5"));
        alter("deleted", admin, broker, new AlterConfigOp(
            new ConfigEntry("max.connection.creation.rate", ""), AlterConfigOp.OpType.DELETE));
        describe("broker", admin, broker, BROKER_KEYS);
        describe("cluster", admin, cluster, BROKER_KEYS);
    }

    private static void topicConfigs(Admin admin) throws Exception {
        NewTopic topic = new NewTopic("configured", 1, (short) 1)
            .configs(Map.of("retention.ms", "86400000", "cleanup.policy", "compact"));
        print("create topic", () -> admin.createTopics(List.of(topic)).all());
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "configured");
        alter("topic", admin, resource, set("segment.bytes", "4194304"),
            new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND));
        describe("appended", admin, resource, Set.of("cleanup.policy"));
        alter("topic refused", admin, resource, set("segment.bytes", "10"));
        alter("append to a number", admin, resource,
            new AlterConfigOp(new ConfigEntry("segment.bytes", "1"), AlterConfigOp.OpType.APPEND));
        alter("subtract", admin, resource,
            new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT));
        describe("topic", admin, resource,
            Set.of("retention.ms", "segment.bytes", "cleanup.policy", "compression.type"));
    }

    private static void quotas(Admin admin) throws Exception {
        ClientQuotaEntity alice = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "alice"));
        Map<String, String> defaultClient = new TreeMap<>();
        defaultClient.put(ClientQuotaEntity.CLIENT_ID, null);
        ClientQuotaEntity anyClient = new ClientQuotaEntity(defaultClient);
        List<ClientQuotaAlteration> alterations = List.of(
            new ClientQuotaAlteration(alice, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                new ClientQuotaAlteration.Op("request_percentage", 50.0))),
            new ClientQuotaAlteration(anyClient, List.of(
                new ClientQuotaAlteration.Op("consumer_byte_rate", 2097152.0))));
        print("alter quotas", () -> admin.alterClientQuotas(alterations).all());
        print("bad quota", () -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice,
            List.of(new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all());
        quotaLines("all quotas", admin, ClientQuotaFilter.all());
        quotaLines("users", admin, ClientQuotaFilter.contains(
            List.of(ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER))));
        quotaLines("default clients", admin, ClientQuotaFilter.containsOnly(
            List.of(ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.CLIENT_ID))));
    }

    private static void loggersAndMetrics(Admin admin) throws Exception {
        ConfigResource loggers = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, "0");
        alter("unknown logger", admin, loggers, set("no.such.logger", "INFO"));
        alter("bad level", admin, loggers, set("root", "LOUD"));
        ConfigResource subscription = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "producers");
        alter("subscription", admin, subscription,
            set("metrics", "org.apache.kafka.producer."), set("interval.ms", "60000"));
        alter("bad subscription", admin, subscription, set("interval.ms", "5"));
        describe("subscription", admin, subscription, Set.of("metrics", "interval.ms", "match"));
        print("listed subscriptions", () -> admin.listConfigResources(
            Set.of(ConfigResource.Type.CLIENT_METRICS), new ListConfigResourcesOptions()).all()
            .thenApply(listed -> listed.stream().map(ConfigResource::name).sorted().toList()));
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    private static void alter(String step, Admin admin, ConfigResource resource, AlterConfigOp... ops) {
        Map<ConfigResource, Collection<AlterConfigOp>> changes = Map.of(resource, List.of(ops));
        print(step, () -> admin.incrementalAlterConfigs(changes).all());
    }

    private static void describe(String step, Admin admin, ConfigResource resource, Set<String> keys)
        throws InterruptedException {
        // A Kafka broker takes a change from its metadata log a moment after the controller
        // answered it: its description may lag.
        Thread.sleep(1_500);
        DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(true);
        KafkaFuture<Map<ConfigResource, Config>> described =
            admin.describeConfigs(List.of(resource), options).all();
        print(step, () -> described.thenApply(configs -> {
            List<String> lines = new ArrayList<>();
            for (ConfigEntry entry : configs.get(resource).entries()) {
                if (!keys.contains(entry.name())) {
                    continue;
                }
                List<String> synonyms = entry.synonyms().stream()
                    .map(s -> s.source() + ":" + s.name() + "=" + s.value()).toList();
                lines.add(entry.name() + "=" + entry.value() + " " + entry.source()
                    + " sensitive=" + entry.isSensitive() + " readOnly=" + entry.isReadOnly()
                    + " type=" + entry.type() + " synonyms=" + synonyms);
            }
            lines.sort(null);
            return lines;
        }));
    }

    private static void quotaLines(String step, Admin admin, ClientQuotaFilter filter)
        throws InterruptedException {
        Thread.sleep(1_500);
        print(step, () -> admin.describeClientQuotas(filter).entities().thenApply(entities -> {
            List<String> lines = new ArrayList<>();
            entities.forEach((entity, values) ->
                lines.add(new TreeMap<>(entity.entries()) + " " + new TreeMap<>(values)));
            lines.sort(null);
            return lines;
        }));
    }

    private interface Step {
        KafkaFuture<?> run() throws Exception;
    }

    /** Prints the step's result (each line of a list on its own), or why it was refused. */
    private static void print(String step, Step call) {
        try {
            Object result = call.run().get();
            if (result instanceof List<?> lines) {
                System.out.println(step + ": " + lines.size() + " lines");
                lines.forEach(line -> System.out.println("  " + line));
            } else {
                System.out.println(step + ": ok");
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            System.out.println(step + ": " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
        } catch (Exception e) {
            System.out.println(step + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }
}
