import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's Java producer writing MESSAGES values of SIZE bytes to TOPIC as fast as it can: in
 * transactions of PER_TRANSACTION messages, each committed before the next begins, or (with
 * PER_TRANSACTION 0) idempotently outside any transaction (acks=all, as a transactional producer
 * writes). A warm-up of one message (one transaction) goes first, outside the clock. Prints one
 * JSON line: messages, bytes, seconds, bytes per second, transactions, and the CPU seconds the
 * process spent in the timed part.
 *
 * <p>Usage: {@code TransactionsBench BOOTSTRAP TOPIC MESSAGES PER_TRANSACTION SIZE}
 */
public final class TransactionsBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long messages = Long.parseLong(args[2]);
        long perTransaction = Long.parseLong(args[3]);
        int size = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 1 << 20);
        props.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 256L << 20);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        boolean transactional = perTransaction > 0;
        if (transactional) {
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-" + ProcessHandle.current().pid());
        }
        byte[] value = new byte[size];
        long transactions = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (transactional) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            producer.send(new ProducerRecord<>(topic, value)).get();
            if (transactional) {
                producer.commitTransaction();
            }
            com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            long cpuBefore = os.getProcessCpuTime();
            long started = System.nanoTime();
            long sent = 0;
            while (sent < messages) {
                long end = transactional ? Math.min(messages, sent + perTransaction) : messages;
                if (transactional) {
                    producer.beginTransaction();
                }
                for (; sent < end; sent++) {
                    producer.send(new ProducerRecord<>(topic, value));
                }
                if (transactional) {
                    producer.commitTransaction();
                    transactions++;
                } else {
                    producer.flush();
                }
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double cpuSeconds = (os.getProcessCpuTime() - cpuBefore) / 1e9;
            long bytes = messages * size;
            System.out.printf("{\"messages\": %d, \"bytes\": %d, \"seconds\": %.3f, \"bytes_per_second\": %.0f, \"transactions\": %d, \"cpu_seconds\": %.3f}%n",
                messages, bytes, seconds, bytes / seconds, transactions, cpuSeconds);
        }
    }
}
