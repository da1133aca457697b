"""The section of docs/benchmarks.md comparing ferrolog with Apache Kafka 4.4, from
scripts/bench_vs_kafka.sh's medians (target/bench-data/vs-kafka.txt)."""

from bench_figures import read_figures

BROKERS = ("ferrolog", "kafka")

# (figure, label in the table, label in the chart)
THROUGHPUT = [
    ("produce_java_1p_acks1", "produce, Java perf test, 1 partition, acks=1", "Java produce 1p acks=1"),
    ("produce_java_64p_acks1", "produce, Java perf test, 64 partitions, acks=1", "Java produce 64p acks=1"),
    ("produce_java_1p_acksall", "produce, Java perf test, 1 partition, acks=all", "Java produce 1p acks=all"),
    ("produce_java_64p_acksall", "produce, Java perf test, 64 partitions, acks=all",
     "Java produce 64p acks=all"),
    ("produce_rdkafka_1p", "produce, librdkafka, 1 partition, acks=1", "librdkafka produce 1p"),
    ("produce_rdkafka_64p", "produce, librdkafka, 64 partitions, acks=1", "librdkafka produce 64p"),
    ("wide_produce", "produce, librdkafka, 10,000 partitions, acks=1", "librdkafka produce 10,000p"),
    ("consume_java_1p", "consume, Java perf test, 1 partition", "Java consume 1p"),
    ("consume_java_64p", "consume, Java perf test, 64 partitions", "Java consume 64p"),
    ("consume_rdkafka_1p", "consume, librdkafka, 1 partition", "librdkafka consume 1p"),
    ("consume_rdkafka_64p", "consume, librdkafka, 64 partitions", "librdkafka consume 64p"),
]

LATENCY = [
    ("latency_1p_acks1", "produce at 10 MiB/s, 1 partition, acks=1"),
    ("latency_64p_acks1", "produce at 32 MiB/s, 64 partitions, acks=1"),
    ("latency_1p_acksall", "produce at 10 MiB/s, 1 partition, acks=all"),
    ("latency_64p_acksall", "produce at 32 MiB/s, 64 partitions, acks=all"),
    ("e2e", "end to end, one record at a time, acks=all"),
]


def ratio(value, reference):
    """value ÷ reference; infinite when the reference is zero, so a goal is never met by it."""
    return value / reference if reference else float("inf")


def verdict(met):
    return "met" if met else "**missed**"


def read_storage_fsync(path):
    """Medians of the `raw` and `log` rates of the fsync_appends bench, or None."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return None
    rates = {"raw": [], "log": []}
    for line in lines:
        name, _, value = line.partition(" appends_per_s=")
        if name in rates and value:
            rates[name].append(float(value))
    if not rates["raw"] or not rates["log"]:
        return None
    return {name: sorted(values)[len(values) // 2] for name, values in rates.items()}


def print_section(path, latency_path, storage_fsync_path, measured, page_date, bar_chart):
    figures = read_figures(path)
    figures.update(read_figures(latency_path))

    def both(key):
        return figures["ferrolog_" + key], figures["kafka_" + key]

    print("## Against Apache Kafka 4.4, same machine, same run\n")
    if measured != page_date:
        print("Measured on %s, with the rest of the page's machine.\n" % measured)
    print("![ferrolog and Kafka 4.4 under the same clients](bench-vs-kafka.svg)\n")
    print("`scripts/bench_vs_kafka.sh`: `ferrolog serve` with its defaults and Apache Kafka 4.4")
    print("(single-node KRaft, the JVM settings of its own `kafka-server-start.sh`: 1 GiB heap, G1),")
    print("each from an empty data dir on the same file system, taking turns, medians of the")
    print("rounds. 1 KiB records. Kafka's `kafka-producer-perf-test` runs with the Java producer's")
    print("defaults but acks (16 KiB batches, linger.ms=5), `kafka-consumer-perf-test` is timed")
    print("over its fetching (joining the group excluded); librdkafka is `tools/loadgen` with the")
    print("loopback section's settings; 500,000 records (0.5 GB) per transfer. The broker's CPU is")
    print("its process's user + system time over the client's whole run, the client's start")
    print("included.\n")

    bars = []
    print("| transfer | ferrolog | Kafka 4.4 | ferrolog ÷ Kafka (goal ≥ 1.0×) "
          "| broker CPU-s per GB, ferrolog / Kafka | CPU ratio (goal ≤ 0.5×) |")
    print("|---|---|---|---|---|---|")
    missed_rate, missed_cpu = [], []
    for key, label, short in THROUGHPUT:
        if "ferrolog_" + key not in figures:
            continue
        ours, theirs = both(key)
        cpu_ours, cpu_theirs = both(key + "_broker_cpu")
        rate_ratio, cpu_ratio = ratio(ours, theirs), ratio(cpu_ours, cpu_theirs)
        if rate_ratio < 1.0:
            missed_rate.append(label)
        if cpu_ratio > 0.5:
            missed_cpu.append(label)
        print("| %s | %.2f GB/s | %.2f GB/s | %.2f× | %.2f / %.2f | %.2f× |"
              % (label, ours / 1e9, theirs / 1e9, rate_ratio, cpu_ours, cpu_theirs, cpu_ratio))
        bars.append((short, ours / 1e9, "ferrolog"))
        bars.append(("", theirs / 1e9, "Kafka"))
    print()
    bar_chart("docs/bench-vs-kafka.svg", "ferrolog and Apache Kafka 4.4, same clients, same run", bars)

    print("Latency with Kafka's Java producer (`tools/kafka/apps/LatencyBench.java`, microseconds:")
    print("Kafka's own tools print whole milliseconds), each broker from an empty data dir and")
    print("warmed by 0.5 GB of kafka-producer-perf-test first (Kafka's JIT compiles its produce")
    print("path over its first seconds of load; cold, it answered sends in up to a second): at a")
    print("fixed rate for 5 seconds, 32 MiB/s (32,768 records a second) over 64 partitions and")
    print("10 MiB/s into one, linger.ms=0, each send timed to its acknowledgement (from its")
    print("scheduled time when the client fell behind), the first second not counted; and end to")
    print("end, kafka-e2e-latency's loop (send one record, poll until a consumer has it, then the")
    print("next), the first tenth not counted. At 100 MiB/s the Java client, beside either broker")
    print("on these two cores, fell behind its schedule, and both brokers' p99 was its backlog,")
    print("hundreds of milliseconds.\n")
    print("| latency | ferrolog p50 / p99 / p99.9 | Kafka 4.4 p50 / p99 / p99.9 "
          "| p99 ferrolog ÷ Kafka (goal ≤ 0.5×) | rate reached, ferrolog / Kafka |")
    print("|---|---|---|---|---|")
    missed_latency = []
    for key, label in LATENCY:
        if "ferrolog_%s_p99_us" % key not in figures:
            continue
        cells = []
        for broker in BROKERS:
            cells.append(" / ".join("%.0f µs" % figures["%s_%s_%s" % (broker, key, p)]
                                    for p in ("p50_us", "p99_us", "p999_us")))
        p99_ratio = ratio(*both(key + "_p99_us"))
        if p99_ratio > 0.5:
            missed_latency.append(label)
        rates = both(key + "_records_per_second")
        print("| %s | %s | %s | %.2f× | %s / %s records/s |"
              % (label, cells[0], cells[1], p99_ratio, f"{rates[0]:,.0f}", f"{rates[1]:,.0f}"))
    print()
    ours, theirs = both("e2e_tool_avg_ms")
    print("Kafka's `kafka-e2e-latency` itself (acks=all, same loop, every record counted), its")
    print("average: ferrolog %.3f ms, Kafka 4.4 %.3f ms.\n" % (ours, theirs))

    print("Memory, start and disk:\n")
    print("| figure | ferrolog | Kafka 4.4 | ferrolog ÷ Kafka | goal |")
    print("|---|---|---|---|---|")
    missed_other = []

    def row(label, key, unit, goal, scale=1.0, fmt="%.0f"):
        ours, theirs = both(key)
        r = ratio(ours, theirs)
        if goal is not None and r > goal:
            missed_other.append(label)
        print("| %s | %s %s | %s %s | %.2f× | %s |"
              % (label, fmt % (ours * scale), unit, fmt % (theirs * scale), unit, r,
                 "≤ %.2f×" % goal if goal is not None else ""))

    row("RSS, idle, empty data dir", "rss_idle_empty", "MiB", 0.25, 1 / 1024)
    row("RSS, peak over the transfers above", "rss_peak", "MiB", 0.25, 1 / 1024)
    row("RSS, idle after the transfers", "rss_idle_loaded", "MiB", 0.25, 1 / 1024)
    row("RSS, idle with 10,000 partitions", "wide_rss_idle", "MiB", 0.25, 1 / 1024)
    row("start to serving 10,000 partitions, after a clean stop", "wide_start_clean", "s", 0.5,
        fmt="%.2f")
    row("start to serving 10,000 partitions, after SIGKILL", "wide_start_unclean", "s", 0.5,
        fmt="%.2f")
    row("data dir after the transfers, bytes", "disk_bytes", "GB", None, 1e-9, "%.2f")
    row("data dir after the transfers, allocated", "disk_allocated_bytes", "GB", None, 1e-9, "%.2f")
    print()

    ours, theirs = both("fsync_each")
    dsync = (figures["ferrolog_dsync_appends_per_s"] + figures["kafka_dsync_appends_per_s"]) / 2
    ours_rate, theirs_rate = ours / 1024, theirs / 1024
    print("Every message fsynced (a topic with `flush.messages=1`; librdkafka sends one 1 KiB")
    print("message per request, requests pipelined, acks=1), against the disk's own rate of the")
    print("same kind of write, `dd bs=1k oflag=dsync` appending to a new file in the same rounds:\n")
    print("| | appends fsynced per second | of `dd`'s rate (goal ≥ 0.95) |")
    print("|---|---|---|")
    print("| ferrolog | %s | %.2f |" % (f"{ours_rate:,.0f}", ours_rate / dsync))
    print("| Kafka 4.4 | %s | %.2f |" % (f"{theirs_rate:,.0f}", theirs_rate / dsync))
    print("| `dd bs=1k oflag=dsync` | %s | |" % f"{dsync:,.0f}")
    print()
    fsync_met = ours_rate / dsync >= 0.95
    storage = read_storage_fsync(storage_fsync_path)
    if storage:
        print("The storage engine alone, in one process (`cargo bench -p ferrolog-storage --bench")
        print("fsync_appends`: `Log::append_as_leader` of a 1 KiB batch with `flush.messages=1`, against")
        print("`write` + `fdatasync` of the same batch to a new file, taking turns, medians of 3 runs")
        print("of 5,000): %s appends a second against %s, %.2f×. Its appends cost one fdatasync"
              % (f"{storage['log']:,.0f}", f"{storage['raw']:,.0f}", storage["log"] / storage["raw"]))
        print("each, as the raw loop's do (the active segment's indexes wait for its roll,")
        print("ARCHITECTURE.md).")
    print("Through the broker, a connection's next produce requests are read and appended while")
    print("an fsync runs, and the next fsync acknowledges them together (group commit,")
    print("ARCHITECTURE.md), so ferrolog can pass `dd`, which waits for each write's sync before")
    print("the next. Kafka serves a connection's requests one at a time, one fsync each.\n")

    print_bounds(figures)
    print("Goals, in this run:\n")
    print("- throughput ≥ 1.0× Kafka on every client and shape: %s%s"
          % (verdict(not missed_rate), (" (" + "; ".join(missed_rate) + ")") if missed_rate else ""))
    print("- broker CPU per GB ≤ 0.5× Kafka's: %s%s"
          % (verdict(not missed_cpu), (" (" + "; ".join(missed_cpu) + ")") if missed_cpu else ""))
    print("- p99 ≤ 0.5× Kafka's: %s%s"
          % (verdict(not missed_latency),
             (" (" + "; ".join(missed_latency) + ")") if missed_latency else ""))
    print("- RSS ≤ 0.25× and start ≤ 0.5× Kafka's: %s%s"
          % (verdict(not missed_other), (" (" + "; ".join(missed_other) + ")") if missed_other else ""))
    print("- fsync'd appends ≥ 0.95× the disk's rate: %s" % verdict(fsync_met))
    print()


def print_bounds(figures):
    """How fetched bytes reach the socket, which decides the consume CPU figures."""
    consumes = [key for key, _, _ in THROUGHPUT if key.startswith("consume_")]
    shares = [ratio(figures["ferrolog_%s_broker_cpu" % key], figures["kafka_%s_broker_cpu" % key])
              for key in consumes if "ferrolog_%s_broker_cpu" % key in figures]
    if not shares:
        return
    print("**Consume CPU.** Both brokers hand fetched bytes to the socket with `sendfile` (ferrolog's")
    print("`ferrolog.fetch.transfer=sendfile`, its default): the kernel copies them from the page")
    print("cache into the socket. ferrolog's consumes cost its process %.2f–%.2f× Kafka's CPU per"
          % (min(shares), max(shares)))
    print("GB here; with `copy` (a `pread` into a buffer, then a `write`) they cost two to three times")
    print("what they do with sendfile (the loopback section).\n")
