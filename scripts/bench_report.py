"""Turns criterion's estimates and the dd baseline into docs/benchmarks.md."""

import datetime
import json
import os
import platform
import subprocess
import sys

from bench_figures import read_figures

CRITERION = "target/criterion"


def median_ns(bench):
    with open(os.path.join(CRITERION, bench, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"]


def throughput_bytes(bench):
    with open(os.path.join(CRITERION, bench, "new", "benchmark.json")) as f:
        return json.load(f)["throughput"]["Bytes"]


def rate(bench):
    """Bytes per second of a throughput bench."""
    return throughput_bytes(bench) / (median_ns(bench) / 1e9)


def gbs(value):
    return "%.2f GB/s" % (value / 1e9)


def bar_chart(path, title, bars):
    """Writes a horizontal bar chart as SVG: bars are (label, value in GB/s, kind), kind being
    "ferrolog", "limit" (the machine's own ceiling, measured in the same run), "stand-in" (the
    same client against a stand-in broker that does next to nothing) or "Kafka" (the same client
    against Apache Kafka 4.4 in the same run)."""
    width, left, bar_height, gap, top = 760, 300, 22, 10, 40
    height = top + len(bars) * (bar_height + gap) + 30
    largest = max(value for _, value, _ in bars) or 1.0
    scale = (width - left - 90) / largest
    colours = {"ferrolog": "#2b6cb0", "limit": "#a0aec0", "stand-in": "#dd8a3c", "Kafka": "#38a169"}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="13">' % (width, height),
           '<rect width="100%%" height="100%%" fill="white"/>',
           '<text x="10" y="24" font-size="15" font-weight="bold">%s</text>' % title]
    for index, (label, value, kind) in enumerate(bars):
        y = top + index * (bar_height + gap)
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                   % (left - 8, y + bar_height - 6, label))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   % (left, y, value * scale, bar_height, colours[kind]))
        out.append('<text x="%.1f" y="%d">%.2f GB/s</text>'
                   % (left + value * scale + 6, y + bar_height - 6, value))
    legend_y = height - 12
    out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (left, legend_y - 10, colours["ferrolog"]))
    out.append('<text x="%d" y="%d">ferrolog</text>' % (left + 18, legend_y))
    if any(kind == "limit" for _, _, kind in bars):
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>'
                   % (left + 100, legend_y - 10, colours["limit"]))
        out.append('<text x="%d" y="%d">this machine\'s limit, same run</text>' % (left + 118, legend_y))
    if any(kind == "stand-in" for _, _, kind in bars):
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>'
                   % (left - 290, legend_y - 10, colours["stand-in"]))
        out.append('<text x="%d" y="%d">stand-in broker</text>' % (left - 272, legend_y))
    if any(kind == "Kafka" for _, _, kind in bars):
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>'
                   % (left + 330, legend_y - 10, colours["Kafka"]))
        out.append('<text x="%d" y="%d">Apache Kafka 4.4</text>' % (left + 348, legend_y))
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(baseline_path):
    baseline = read_figures(baseline_path)
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    cores = os.cpu_count()
    fs = subprocess.run(["sh", "-c", "df -T target | tail -1 | awk '{print $2}'"],
                        capture_output=True, text=True).stdout.strip()
    # The day the baseline was measured: a section measured on another day says so itself.
    date = file_date(baseline_path)

    append_16k = rate("append/1KiB_records/16KiB_batches")
    append_1m = rate("append/1KiB_records/1MiB_batches")
    append_1m_two = rate("append/1KiB_records_2_appenders/1MiB_batches")
    raw_16k = rate("append/raw_pwrite_into_reserved_blocks/16KiB_batches")
    raw_1m = rate("append/raw_pwrite_into_reserved_blocks/1MiB_batches")
    read = rate("read/sequential_1MiB_fetches")
    recover = rate("recovery/segment_recover_16KiB_batches")
    lookup = median_ns("index_lookup/offset_index_full_10MiB_random")
    translate = median_ns("index_lookup/segment_translate_offset_random")

    def append_row(label, append, block, raw, note):
        plain, reserved = baseline["dd_" + block], baseline["dd_%s_reserved" % block]
        return (label, gbs(append),
                "dd bs=%s: %s; dd bs=%s into reserved blocks: %s; raw pwrite of the same batches"
                " into reserved blocks: %s" % (block, gbs(plain), block, gbs(reserved), gbs(raw)),
                "%.0f%% / %.0f%% / %.0f%%" % (100 * append / plain, 100 * append / reserved,
                                             100 * append / raw),
                note)

    rows = [
        append_row("append, 1 KiB records in 16 KiB batches", append_16k, "16k", raw_16k,
                   "%.0f%% of dd bs=1M" % (100 * append_16k / baseline["dd_1M"])),
        append_row("append, 1 KiB records in 1 MiB batches", append_1m, "1M", raw_1m,
                   "target ≥ 80% of dd"),
        append_row("append, 1 MiB batches, two threads into one partition", append_1m_two, "1M",
                   raw_1m, "batch checks run outside the log's lock"),
        ("read, sequential 1 MiB fetches (pread into a buffer)", gbs(read),
         "dd read of a cached file: %s" % gbs(baseline["dd_read"]), "%.0f%%" % (100 * read / baseline["dd_read"]), ""),
        ("segment recovery (CRC + reindex), one thread", gbs(recover),
         "", "", "target ≥ 1 GB/s"),
        ("offset index lookup, full 10 MiB index, random", "%.0f ns" % lookup, "", "", ""),
        ("offset → file position (index + header walk), random", "%.0f ns" % translate, "", "", ""),
    ]
    bar_chart("docs/bench-storage.svg", "Storage engine against the machine (page cache, no fsync)", [
        ("append, 1 MiB batches", append_1m / 1e9, "ferrolog"),
        ("raw pwrite of them, reserved blocks", raw_1m / 1e9, "limit"),
        ("dd bs=1M", baseline["dd_1M"] / 1e9, "limit"),
        ("dd bs=1M, reserved blocks", baseline["dd_1M_reserved"] / 1e9, "limit"),
        ("append, 16 KiB batches", append_16k / 1e9, "ferrolog"),
        ("raw pwrite of them, reserved blocks", raw_16k / 1e9, "limit"),
        ("dd bs=16k", baseline["dd_16k"] / 1e9, "limit"),
        ("dd bs=16k, reserved blocks", baseline["dd_16k_reserved"] / 1e9, "limit"),
        ("read, 1 MiB fetches", read / 1e9, "ferrolog"),
        ("dd read of a cached file", baseline["dd_read"] / 1e9, "limit"),
        ("segment recovery, one thread", recover / 1e9, "ferrolog"),
    ])
    print("# Benchmarks\n")
    print("Regenerate with `scripts/bench.sh` (criterion benches in `crates/storage/benches/storage.rs`,")
    print("the `dd` baseline measured in the same run by the script, then this page written by")
    print("`scripts/bench_report.py`). All figures are on page-cached data, no fsync.\n")
    print("- date: %s" % date)
    print("- machine: %s, %d cores, %s, %s file system (the bench files live in `target/bench-data`)"
          % (cpu, cores, platform.system() + " " + platform.release(), fs))
    print("- baseline: `dd if=/dev/zero bs=1M count=256 conv=notrunc` (and `bs=16k count=16384`) to a"
          " new file, and again into a new file whose blocks `fallocate --keep-size --length 256MiB`"
          " reserved first; median of 5 runs after 2 warm-ups; `dd of=/dev/null bs=1M` from a cached"
          " file for reads\n")
    print("![Storage figures against the machine's limits](bench-storage.svg)\n")
    print("Ratios for appends: against plain `dd` (the target's measure) / against `dd` into reserved")
    print("blocks / against raw `pwrite` of the same batches into reserved blocks.\n")
    print("| bench | ferrolog | machine limit, same run | ratio | note |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| %s |" % " | ".join(row))
    print()
    manager_path = "target/bench-data/manager.txt"
    if os.path.exists(manager_path):
        print("## Opening 10,000 partitions (LogManager)\n")
        print("`cargo bench -p ferrolog-storage --bench manager`: 10,000 partitions of 16 records")
        print("each in one data dir, opened after a clean shutdown (no segment scanned) and after an")
        print("unclean one (every active segment recovered), median of 3 runs. Target: 10,000 cleanly")
        print("shut down partitions open in under 2 seconds.\n")
        print("| shutdown | recovery threads | open time |")
        print("|---|---|---|")
        with open(manager_path) as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.startswith("open "):
                fields = dict(part.split("=") for part in line.split()[2:])
                print("| %s | %s | %s ms |" % (line.split()[1], fields["threads"], fields["median_ms"]))
        print()
        print("## The scheduler's jobs over 10,000 partitions\n")
        print("Same bench: one pass of each background job over every partition (median of 3), and")
        print("append throughput to one partition (16 KiB batches) alone and while every job runs back")
        print("to back on another thread, a far heavier load than their real periods (minutes).")
        print("Target: appends under 5% slower.\n")
        print("| job | one pass |")
        print("|---|---|")
        for line in lines:
            if line.startswith("job "):
                fields = dict(part.split("=") for part in line.split()[2:])
                print("| `%s` | %s ms |" % (line.split()[1], fields["median_ms"]))
        for line in lines:
            if line.startswith("append "):
                fields = dict(part.split("=") for part in line.split()[1:])
                print()
                def change(percent):
                    value = float(percent)
                    return "%.1f%% %s" % (abs(value), "slower" if value >= 0 else "faster")
                print("Medians of %s rounds, the three cases taking turns in each. Append alone: %s MB/s;"
                      " with the inspecting jobs running: %s MB/s (%s); with every job"
                      " including the checkpoint writes: %s MB/s (%s)."
                      % (fields["rounds"], fields["alone_mb_s"],
                         fields["with_inspecting_jobs_mb_s"], change(fields["inspecting_slowdown_percent"]),
                         fields["with_all_jobs_mb_s"], change(fields["all_slowdown_percent"])))
        print()
    cleaner_path = "target/bench-data/cleaner.txt"
    if os.path.exists(cleaner_path):
        print("## Log cleaner, one thread\n")
        print("`cargo bench -p ferrolog-storage --bench cleaner`: one pass over 64 MiB of 1 KiB records")
        print("(16-record batches) from a page-cached log, median of 3. \"log MB/s\" counts")
        print("the bytes of the log as stored; \"record MB/s\" the uncompressed records. Target: at least")
        print("300 MB/s per thread uncompressed, at most 24 bytes of map per key.\n")
        print("| unique keys | codec | log MB/s | record MB/s |")
        print("|---|---|---|---|")
        with open(cleaner_path) as f:
            for line in f:
                if line.startswith("clean "):
                    fields = dict(part.split("=") for part in line.split()[1:])
                    print("| %s%% | %s | %s | %s |" % (fields["unique_percent"], fields["codec"],
                                                    fields["mb_per_s"], fields.get("record_mb_per_s", "")))
                elif line.startswith("map "):
                    fields = dict(part.split("=") for part in line.split()[1:])
                    print()
                    print("Map memory: %s bytes per slot; %s bytes per key at the default load factor 0.9."
                          % (fields["bytes_per_slot"], fields["bytes_per_key_at_load_factor_0.9"]))
        print()
        print("The bench's values compress far better under lz4 than intended (about 50 to 1: the ratio")
        print("of the two columns), so for lz4 the log MB/s is small while the record MB/s shows the work")
        print("done: every record is decompressed, checked against the map and the survivors recompressed.\n")
    network_path = "target/bench-data/network.txt"
    if os.path.exists(network_path):
        network = read_figures(network_path)
        loopback = network["iperf3"]
        bar_chart("docs/bench-network.svg", "Real clients over loopback", [
            ("produce, librdkafka", network["produce"] / 1e9, "ferrolog"),
            ("produce, librdkafka, stand-in", network["sink_produce"] / 1e9, "stand-in"),
            ("produce, rskafka", network["produce_rskafka"] / 1e9, "ferrolog"),
            ("produce, rskafka, stand-in", network["sink_produce_rskafka"] / 1e9, "stand-in"),
            ("consume (pread + write)", network["consume_copy"] / 1e9, "ferrolog"),
            ("consume (sendfile)", network["consume_sendfile"] / 1e9, "ferrolog"),
            ("consume, stand-in", network["sink_consume"] / 1e9, "stand-in"),
            ("produce, librdkafka, Kafka 4.4", network["kafka_produce"] / 1e9, "Kafka"),
            ("consume, librdkafka, Kafka 4.4", network["kafka_consume"] / 1e9, "Kafka"),
            ("loopback TCP, iperf3", loopback / 1e9, "limit"),
            ("dd of the produced gigabyte", network["dd"] / 1e9, "limit"),
        ])
        print("## Real clients over loopback (`ferrolog serve`)\n")
        print("![Loopback figures against the machine's limits](bench-network.svg)\n")
        print("`scripts/bench_network.sh`: librdkafka 2.12 (`tools/loadgen`, a Rust program over the")
        print("`rdkafka` crate) producing 1,000,000 messages of 1 KiB (acks=1, linger.ms=5, batch.size")
        print("1 MB, no compression) to one partition, then consuming them from the start")
        print("(max.partition.fetch.bytes 4 MiB, fetch.queue.backoff.ms 0, queued.max.messages.kbytes")
        print("256 MiB, queued.min.messages 1,000,000, socket.receive.buffer.bytes 8 MiB); and, as a")
        print("second client of another design, rskafka 0.6 producing the same messages in batches of")
        print("1,000 with four requests outstanding (`--client rskafka`). Each client runs against")
        print("`ferrolog serve` and against a stand-in broker (`ferrolog-loadgen sink`) that does next")
        print("to nothing: it drops produced batches after counting them and answers fetches from a")
        print("log held in memory with a single copy, so its column is what these clients reach on")
        print("these two cores when the broker costs almost nothing. Median of 5 rounds, each from an")
        print("empty data dir. The loopback limit is one `iperf3` TCP stream (median of 3, 5 s each);")
        print("the write reference is `dd bs=1M count=1000` to a new file, written right after the")
        print("previous round's data was deleted and removed just before the produce. Targets:")
        print("produce ≥ 50% and consume ≥ 70% of loopback TCP.\n")
        print("| transfer | ferrolog | of loopback TCP (%s) | stand-in broker | of loopback TCP | ferrolog ÷ stand-in |"
              % gbs(loopback))
        print("|---|---|---|---|---|---|")
        for name, stand_in, label in [
            ("produce", "sink_produce", "produce, librdkafka"),
            ("produce_rskafka", "sink_produce_rskafka", "produce, rskafka"),
            ("consume_copy", "sink_consume", "consume, librdkafka, `ferrolog.fetch.transfer=copy`"),
            ("consume_sendfile", "sink_consume", "consume, librdkafka, `ferrolog.fetch.transfer=sendfile` (default)"),
        ]:
            print("| %s | %s | %.0f%% | %s | %.0f%% | %.0f%% |"
                  % (label, gbs(network[name]), 100 * network[name] / loopback,
                     gbs(network[stand_in]), 100 * network[stand_in] / loopback,
                     100 * network[name] / network[stand_in]))
        print()
        print("Apache Kafka 4.4.0 in the same rounds, on the same disk, with the same clients and")
        print("settings (`scripts/kafka.sh start`: a single-node KRaft broker, started with the JVM")
        print("settings of Kafka's own `kafka-server-start.sh`: 1 GiB heap, G1; the broker's CPU is the")
        print("JVM process's):\n")
        print("| transfer | ferrolog | Apache Kafka 4.4 | ferrolog ÷ Kafka | ferrolog broker CPU s/GB | Kafka broker CPU s/GB |")
        print("|---|---|---|---|---|---|")
        for name, kafka, label in [
            ("produce", "kafka_produce", "produce, librdkafka"),
            ("consume_copy", "kafka_consume", "consume, librdkafka"),
        ]:
            print("| %s | %s | %s | %.0f%% | %.2f | %.2f |"
                  % (label, gbs(network[name]), gbs(network[kafka]),
                     100 * network[name] / network[kafka],
                     network[name + "_broker_cpu"], network[kafka + "_broker_cpu"]))
        print()
        print("`dd` of the produced gigabyte in the same rounds: %s. The storage layer's own append"
              % gbs(network["dd"]))
        print("rate in this run (1 KiB records in 1 MiB batches, first table): %s, so the log itself is"
              % gbs(append_1m))
        print("not what limits produce here.")
        print()
        print("CPU time per gigabyte moved, from the same rounds (medians): the client's is its whole")
        print("process's CPU time while the clock ran (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, the")
        print("client library's threads and the kernel's work on its socket included); the broker's is")
        print("the broker process's user + system time (`/proc/PID/stat`) across the client's whole")
        print("run. With two cores, no arrangement of the work can move more than 2 ÷ (client +")
        print("broker) GB/s: the column “two cores allow at most”.\n")
        print("| transfer | broker | client CPU s/GB | broker CPU s/GB | two cores allow at most | rate ÷ that ceiling |")
        print("|---|---|---|---|---|---|")
        for name, broker_name, label in [
            ("produce", "ferrolog", "produce, librdkafka"),
            ("sink_produce", "stand-in", "produce, librdkafka"),
            ("produce_rskafka", "ferrolog", "produce, rskafka"),
            ("sink_produce_rskafka", "stand-in", "produce, rskafka"),
            ("consume_copy", "ferrolog", "consume, copy"),
            ("consume_sendfile", "ferrolog", "consume, sendfile"),
            ("sink_consume", "stand-in", "consume"),
        ]:
            client = network[name + "_client_cpu"]
            broker = network[name + "_broker_cpu"]
            ceiling = 2e9 / (client + broker)
            print("| %s | %s | %.2f | %.2f | %s | %.0f%% |"
                  % (label, broker_name, client, broker, gbs(ceiling), 100 * network[name] / ceiling))
        print()
        print("Neither target is met. The stand-in rows show how much of that is the clients: against a")
        print("broker that keeps nothing and reads no disk, librdkafka reached %.0f%% of loopback TCP"
              % (100 * network["sink_produce"] / loopback))
        print("producing and %.0f%% consuming in this run. So the consume target is out of reach for any"
              % (100 * network["sink_consume"] / loopback))
        print("broker on this machine, and the produce target would leave a broker no CPU at all for the")
        print("work Kafka requires of it (below). The figures in the notes below that name a date were")
        print("measured by hand on that day, on a machine of this kind; the tables above are this run's.")
        print()
        print("- **Produce.** librdkafka spends %.2f CPU-seconds per gigabyte it produces here (a copy of"
              % network["produce_client_cpu"])
        print("""  each message at `produce()`, another into its batch, CRC-32C of each batch, two threads
  handing messages over through locked queues); rskafka, with no local queue but an allocation
  per record, spends as much or more. With the two cores shared, that alone holds even the
  stand-in near half of loopback TCP.""")
        print("  ferrolog's own cost on top, %.2f s/GB in this run, is" % network["produce_broker_cpu"])
        print("""  the work a Kafka broker cannot skip, and the column "ferrolog ÷ stand-in" is what it costs
  in rate:
  one kernel copy out of the socket, CRC-32C and the framing checks of every record, and the
  `pwrite` into the page cache (a second copy). Those two copies alone cost about 0.25 s/GB
  here (`iperf3`'s receiving side used 44% of a core for 4.07 GB/s, and `dd` writes the page
  cache at about 6 GB/s, by hand on 2026-11-30). And every produced byte lands in page-cache
  memory the VM must back first. Each round here produces into memory freed moments before,
  the best case this VM offers; even so the `dd` reference above, a buffered write of the
  same gigabyte, ranged from 0.4 to 1.4 GB/s between rounds and runs on 2026-11-30, and the
  same produce by hand from 0.6 to 1.4 GB/s within minutes. Producing three gigabytes back to
  back to one broker (`ferrolog-loadgen --topic benchN --messages 1000000 produce` for N =
  1, 2, 3) gave 1.31, 0.41 and 0.37 GB/s: once freed memory is used up, the
  page cache grows into memory the VM has not touched, which it writes at 0.3–0.5 GB/s
  (`../shared/notes/machine.md`). Neither more producers nor other librdkafka settings helped:
  two producers side by side moved 1.06 GB/s together; `delivery.report.only.error`,
  `message.copy.max.bytes=0` and `linger.ms=20` with larger batches were each slower than the
  settings above (1.07–1.21 GB/s against 1.17–1.29 GB/s in alternating runs, by hand).
- **Consume.** ferrolog serves close to what the stand-in does, which copies from memory once
  as ferrolog copies from the page cache once: the broker's fetch path adds little. librdkafka
  spends about 0.5 s/GB and keeps one fetch in flight per broker connection, parsing a
  response before it asks for the next, so broker and client partly take turns. Giving the
  client a larger local queue and socket buffer (the settings above) took it from 1.6–1.7 to
  2.1–2.2 GB/s; taking messages in batches of 10,000 (`rd_kafka_consume_batch_queue`) instead
  of one `poll` each changed nothing. Two consumers reading two partitions at once (`serve
  --override num.partitions=2`, `ferrolog-loadgen ... consume --partition 0` and `--partition
  1` side by side, 1 GB each, by hand) moved 2.4–2.7 GB/s together, median 2.69 GB/s of 5
  rounds: about 65% of loopback. rskafka consumes at about 0.65 GB/s (it decodes every record
  into vectors of its own), so it is not run here.
- **sendfile moves a little less than pread + write here, for far less of the broker's
  CPU**, as plain C programs on this machine show for loopback with 2 cores (a `sendfile`
  loop moved 1.54 GB/s, `read` + `write` with a 1 MiB buffer 2.57 GB/s): the receiver copies
  either way, so sendfile saves only the sender's copy, but that copy is most of what a
  consume costs the broker. Under the next section's consumers (0.5 GB each, two rounds by
  hand on 2026-12-02) sendfile cost the broker 0.21–0.35 CPU-s per GB over 64 partitions
  against 0.64–0.88 for `copy`, and 0.43–1.00 against 0.72–1.45 on one partition, at rates
  within the runs' spread of each other (the Java consumer's a little higher with sendfile).
  So sendfile is the default, as in Kafka; `copy` stays available.
""")
    vs_kafka_path = "target/bench-data/vs-kafka.txt"
    if os.path.exists(vs_kafka_path):
        import bench_report_vs_kafka
        bench_report_vs_kafka.print_section(vs_kafka_path, "target/bench-data/vs-kafka-latency.txt",
                                            "target/bench-data/fsync-appends-storage.txt",
                                            file_date(vs_kafka_path), date, bar_chart)
    tls_path = "target/bench-data/tls.txt"
    if os.path.exists(tls_path):
        print_tls_section(tls_path, "target/bench-data/tls-cipher.txt")
    transactions_path = "target/bench-data/transactions.txt"
    if os.path.exists(transactions_path):
        print_transactions_section(transactions_path, date)
    groups_path = "target/bench-data/groups.txt"
    if os.path.exists(groups_path):
        import bench_report_groups
        measured = file_date(groups_path)
        bench_report_groups.print_section(
            groups_path, "" if measured == date else "Measured on %s, with the rest of the page's machine." % measured)
    share_path = "target/bench-data/share.txt"
    if os.path.exists(share_path):
        import bench_report_share
        measured = file_date(share_path)
        bench_report_share.print_section(
            share_path, "" if measured == date else "Measured on %s, with the rest of the page's machine." % measured)
    move_path = "target/bench-data/log-dir-move.txt"
    if os.path.exists(move_path):
        print_log_dir_move_section(move_path, "target/bench-data/log-dir-move-storage.txt", date)
    idle_path = "target/bench-data/idle_fetchers.txt"
    if os.path.exists(idle_path):
        idle = read_figures(idle_path)
        print("## Produce while consumers wait on idle partitions\n")
        print("`scripts/bench_idle_fetchers.py`: 32 librdkafka consumers (confluent-kafka) long-poll one")
        print("partition each of a topic nobody writes to (`fetch.wait.max.ms=500`) while one producer")
        print("sends 20,000 records of 100 bytes to another topic, one request at a time (acks=1,")
        print("linger.ms=0); the broker's CPU time (`/proc/PID/stat`) across the produces, medians of 3")
        print("alternating runs, each broker from an empty data directory, Kafka 4.4 with the JVM")
        print("settings of its own start script. A produce wakes only the fetches that read its")
        print("partition, in both brokers.\n")
        print("| broker | broker CPU per produce | produces per second |")
        print("|---|---|---|")
        for name, label in [("ferrolog", "ferrolog"), ("kafka", "Apache Kafka 4.4")]:
            print("| %s | %.0f µs | %s |"
                  % (label, idle[name + "_us_per_produce"],
                     f"{idle[name + '_produces_per_s']:,.0f}"))
        print()
    if os.path.exists(os.path.join(CRITERION, "authorize")):
        print("## Authorization decisions\n")
        print("`cargo bench -p ferrolog-broker --bench authorize`: one decision (READ on a topic by")
        print("the principal an ACL allows) among N ACLs, 99% literal and 1% prefixed, through the")
        print("index the broker uses and, for comparison, by scanning every ACL. With an authorizer,")
        print("each topic a request names costs one decision (Metadata's authorized operations,")
        print("when asked for, nine).\n")
        print("| ACLs | indexed | scanning every ACL |")
        print("|---|---|---|")
        for count in [100, 10000, 100000]:
            indexed = median_ns("authorize/indexed/%d" % count)
            scanned = median_ns("authorize/scan/%d" % count)
            print("| %s | %.2f µs | %.2f µs |" % (f"{count:,}", indexed / 1e3, scanned / 1e3))
        print()
    print("""## Reading the figures

- **Append** measures `Log::append_as_leader` end to end: batch validation (CRC-32C, every
  record's framing, timestamps), in-place offset assignment, the write, and index upkeep, 256 MiB
  into a new log per iteration.
- **Why appends can beat plain `dd`:** the log reserves disk blocks ahead of its writes with
  `fallocate(FALLOC_FL_KEEP_SIZE)`, up to 16 MiB at a time once a segment holds 1 MiB, and a
  buffered write into blocks already allocated skips ext4's delayed-allocation bookkeeping,
  about 40% of what a plain buffered write costs the kernel here (compare the two `dd` figures).
  File sizes do not change (they stay the size of the data), and the reservation is released
  when a segment rolls or closes (ARCHITECTURE.md, "Reserving blocks ahead of appends"). So two
  ceilings of that same kind of write are measured beside plain `dd`: `dd` into reserved blocks, and a raw `pwrite` loop
  writing the very same batches into reserved blocks with no validation or indexing.
- Batches are not page-aligned (16,913 and 1,046,061 bytes here), and unaligned buffered writes
  cost the kernel more than aligned ones of the same size (each write finishes a page the
  previous one started): that, not ferrolog, is most of the gap to `dd`, above all for 16 KiB
  batches. What ferrolog adds on top of the raw writes is the validation Kafka requires of
  every produced batch: about 16 µs of CRC-32C and 18 µs of record-framing checks per MiB.
- **Read** copies each fetched slice out of the page cache into a buffer, as the broker does
  when it does not use sendfile.
- **Recovery** is `Segment::recover` over a 256 MiB page-cached segment: every batch's CRC is
  checked and both indexes are rebuilt.
- The `dd` baseline itself moves between runs on this VM (5.6–6.5 GB/s for `bs=1M` across
  the runs made while tuning), which moves the first ratios by ±10 points; the raw-`pwrite`
  ratio, measured inside the same bench process, is the steadier comparison.
- This VM's memory is lazily backed, so the first touch of fresh memory is slow (see
  `../shared/notes/machine.md`): the `dd` baseline and the append bench both write new files
  and pay it alike, which is why the baseline is measured in the same way and the same run.
""")


def file_date(path):
    """The day `path` was last written."""
    return datetime.date.fromtimestamp(os.path.getmtime(path)).isoformat()


def print_transactions_section(path, page_date):
    """The transactions section, from scripts/bench_transactions.sh's medians."""
    txn = read_figures(path)
    measured = file_date(path)
    bars = []
    for name, kind in (("ferrolog", "ferrolog"), ("kafka", "Kafka")):
        for transfer, label in (("java_idempotent", "idempotent"), ("java_txn1000", "txn of 1,000"),
                                ("java_txn10000", "txn of 10,000")):
            bars.append(("%s, Java, %s" % (kind, label), txn["%s_%s" % (name, transfer)] / 1e9, kind))
    bar_chart("docs/bench-transactions.svg", "Transactional produce, Kafka's Java producer", bars)
    print("## Transactional produce\n")
    print("![Transactional produce against idempotent produce](bench-transactions.svg)\n")
    if measured != page_date:
        print("Measured on %s, with the rest of the page's machine.\n" % measured)
    print("`scripts/bench_transactions.sh`: 1 KiB messages written by Kafka's Java producer")
    print("(`tools/kafka/apps/TransactionsBench.java`: acks=all, 5 ms linger, 1 MiB batches; on")
    print("transactions v2 with both brokers) in transactions of 1,000 and of 10,000 messages, each")
    print("committed before the next begins, and idempotently outside any transaction; 500,000")
    print("messages per transfer. librdkafka (`tools/loadgen`, transactions v1) writes 50,000 in")
    print("transactions of 1,000 and of 10,000. ferrolog and Apache Kafka 4.4 (its start script's")
    print("JVM settings), each from an empty data dir, three rounds, the order of the Java transfers")
    print("rotating; medians. The broker's CPU is counted over each client's whole run (Kafka's JIT")
    print("warming up included: it starts afresh each round).\n")
    print("| client, transfer | ferrolog | Kafka 4.4 | ferrolog / Kafka | broker CPU-s per GB, ferrolog / Kafka | client CPU-s per GB, with ferrolog / with Kafka |")
    print("|---|---|---|---|---|---|")
    transfers = (("java_idempotent", "Java, idempotent (no transaction)"),
                 ("java_txn1000", "Java, transactions of 1,000"),
                 ("java_txn10000", "Java, transactions of 10,000"),
                 ("rdkafka_txn1000", "librdkafka, transactions of 1,000"),
                 ("rdkafka_txn10000", "librdkafka, transactions of 10,000"))
    for transfer, label in transfers:
        ours, theirs = txn["ferrolog_" + transfer], txn["kafka_" + transfer]
        print("| %s | %s | %s | %.2f× | %.2f / %.2f | %.2f / %.2f |"
              % (label, gbs(ours), gbs(theirs), ours / theirs,
                 txn["ferrolog_%s_broker_cpu" % transfer], txn["kafka_%s_broker_cpu" % transfer],
                 txn["ferrolog_%s_client_cpu" % transfer], txn["kafka_%s_client_cpu" % transfer]))
    print()

    def cores(broker, transfer):
        """The cores client and broker kept busy together during the transfer."""
        return txn["%s_%s" % (broker, transfer)] / 1e9 * (
            txn["%s_%s_broker_cpu" % (broker, transfer)] + txn["%s_%s_client_cpu" % (broker, transfer)])

    print("- **Transactions against no transaction, on ferrolog**: transactions of 1,000 run at")
    print("  %.2f× and of 10,000 at %.2f× the idempotent rate with the Java producer. The Java client"
          % (txn["ferrolog_java_txn1000"] / txn["ferrolog_java_idempotent"],
             txn["ferrolog_java_txn10000"] / txn["ferrolog_java_idempotent"]))
    print("  spends %.1f–%.1f CPU-s per GB against ferrolog's %.1f–%.1f: together"
          % (min(txn["ferrolog_java_%s_client_cpu" % t] for t in ("idempotent", "txn1000", "txn10000")),
             max(txn["ferrolog_java_%s_client_cpu" % t] for t in ("idempotent", "txn1000", "txn10000")),
             min(txn["ferrolog_java_%s_broker_cpu" % t] for t in ("idempotent", "txn1000", "txn10000")),
             max(txn["ferrolog_java_%s_broker_cpu" % t] for t in ("idempotent", "txn1000", "txn10000"))))
    print("  they keep %.1f–%.1f of the machine's 2 cores busy, so the client's CPU, not the transactions,"
          % (min(cores("ferrolog", "java_" + t) for t in ("idempotent", "txn1000", "txn10000")),
             max(cores("ferrolog", "java_" + t) for t in ("idempotent", "txn1000", "txn10000"))))
    print("  bounds these rates.")
    print("- **librdkafka spends about 100 ms on each transaction against either broker** (%.1f and"
          % (txn["ferrolog_rdkafka_txn1000"] / 1.024e6))
    print("  %.1f transactions of 1,000 1 KiB messages a second against ferrolog and Kafka): its own"
          % (txn["kafka_rdkafka_txn1000"] / 1.024e6))
    print("  pacing, not either broker's; transactions of 10,000 spread it over ten times the data.\n")


def print_log_dir_move_section(path, storage_path, page_date):
    """Moving a partition between data directories, from scripts/bench_log_dir_move.sh."""
    moves = read_figures(path)
    storage = {"move": [], "idle": [], "during_move": []}
    with open(storage_path) as f:
        for line in f:
            fields = dict(part.split("=") for part in line.split()[1:] if "=" in part)
            if line.startswith("move "):
                storage["move"].append(float(fields["rate"]))
            elif line.startswith("append "):
                storage["idle"].append(float(fields["idle"]))
                storage["during_move"].append(float(fields["during_move"]))
    middle = {key: sorted(values)[len(values) // 2] for key, values in storage.items()}
    measured = file_date(path)
    cold = moves.get("cold_cache", 0) >= 1
    print("## Moving a partition between data directories\n")
    if measured != page_date:
        print("Measured on %s, with the rest of the page's machine.\n" % measured)
    print("`scripts/bench_log_dir_move.sh`: a one-partition topic of 512 MiB (Kafka's")
    print("producer-perf-test, 100 KiB records) moved to the broker's other data directory, on the")
    print("same file system, by Kafka's `kafka-reassign-partitions` with `log_dirs`, unthrottled;")
    if cold:
        print("the page cache dropped first, so that the copy reads the log from the disk. Then moved")
        print("back, from a cold cache again, while Kafka's producer-perf-test writes 1 KiB records")
    else:
        print("the page cache could not be dropped (not root), so the copy read the log from memory.")
        print("Then moved back while Kafka's producer-perf-test writes 1 KiB records")
    print("(acks=1) to an eight-partition topic of the same broker as fast as it can. A move is")
    print("timed on the file system from the moment the `-future` directory appears to the moment")
    print("the partition's directory is in the target and the future one gone, the swap included;")
    print("the producer's rate is its topic's log files' growth during the move, against the same")
    print("over the 3 seconds before. `ferrolog serve` and Apache Kafka 4.4 (its start script's JVM")
    print("settings), each from empty data dirs, three rounds taking turns; medians. Beside them, in")
    print("the same run: `dd` writing 256 MiB in 1 MiB blocks, buffered and with `conv=fdatasync`,")
    print("and reading it back with `iflag=direct` (the disk's sequential read).\n")
    read = moves["dd_read_1M_direct"]
    buffered, synced = moves["dd_1M_none"], moves["dd_1M_fdatasync"]

    def share(part, whole):
        return "%.0f%%" % (100 * part / whole) if whole > 0 else "n/a"

    print("| | move rate | of the disk's read | move rate beside the producer | the producer during the move / before it |")
    print("|---|---|---|---|---|")
    for name, label in (("ferrolog", "ferrolog"), ("kafka", "Kafka 4.4")):
        during, alone = moves[name + "_loaded_others"], moves[name + "_others_alone"]
        print("| %s | %s | %s | %s | %.0f / %.0f MB/s (%s) |" % (
            label, gbs(moves[name]), share(moves[name], read) if cold else "n/a (warm cache)",
            gbs(moves[name + "_loaded"]), during / 1e6, alone / 1e6, share(during, alone)))
    print("| `dd` bs=1M: read with O_DIRECT / write buffered / write with fdatasync | %s / %s / %s | | | |"
          % (gbs(read) if read > 0 else "n/a", gbs(buffered), gbs(synced)))
    print()
    print("Neither broker fsyncs the copy beyond what the partition's log had fsynced: ferrolog's")
    print("swap fsyncs the future log up to the current log's recovery point, and the freshly")
    print("produced log was not flushed yet (default flush settings).")
    if cold:
        print("The copy reads the disk and writes to the page cache; the disk's read rate bounds it.\n")
    else:
        print("The copy reads and writes the page cache; buffered `dd` bounds it.\n")
    print("ferrolog moves the partition %.1f× as fast as Kafka 4.4 alone, and %.1f× as fast beside"
          % (moves["ferrolog"] / moves["kafka"], moves["ferrolog_loaded"] / moves["kafka_loaded"]))
    print("the producer. Kafka's mover fetches 1 MiB at a time through its replica fetcher path and")
    print("waits for its controller to accept the new directory before it swaps; ferrolog's copies")
    print("1 MiB chunks straight from the log's files. The producer beside the move keeps %s of"
          % share(moves["ferrolog_loaded_others"], moves["ferrolog_others_alone"]))
    print("its rate on ferrolog and %s on Kafka while the move runs, and writes %.1f× as much to"
          % (share(moves["kafka_loaded_others"], moves["kafka_others_alone"]),
             moves["ferrolog_loaded_others"] / max(moves["kafka_loaded_others"], 1)))
    print("ferrolog as to Kafka meanwhile (the same Java producer writes %.1f× as much to ferrolog"
          % (moves["ferrolog_others_alone"] / max(moves["kafka_others_alone"], 1)))
    print("with nothing moving). The two cores are shared by the broker, the producer's JVM and the")
    print("copy.\n")
    print("The LogManager alone (`cargo bench -p ferrolog-storage --bench log_dir_move`, same run, 64")
    print("MiB segments, medians of 3), the log flushed first so that the swap fsyncs the whole copy:")
    print("the same 512 MiB move runs at %s while another partition of" % gbs(middle["move"]))
    print("the same disk takes 64 KiB appends at %s, against %s for the same appends with nothing"
          % (gbs(middle["during_move"]), gbs(middle["idle"])))
    print("moving (for as long as the move took). Together, %s against `dd`'s %s with fdatasync:"
          % (gbs(middle["move"] + middle["during_move"]), gbs(synced)))
    print("the two share the disk's write-back.")
    print("A move is limited with `replica.alter.log.dirs.io.max.bytes.per.second` when the")
    print("partitions beside it must keep more of the disk.\n")


def print_tls_section(tls_path, cipher_path):
    """The TLS section, from scripts/bench_tls.sh's medians."""
    tls = read_figures(tls_path)
    ciphers = {}
    if os.path.exists(cipher_path):
        with open(cipher_path) as f:
            for line in f:
                broker, _, agreed = line.strip().partition(" ")
                ciphers[broker] = agreed
    brokers = [("ferrolog", "ferrolog"), ("sink", "stand-in"), ("kafka", "Apache Kafka 4.4")]
    bars = []
    for transfer in ("produce", "consume"):
        for name, label in brokers:
            kind = {"ferrolog": "ferrolog", "sink": "stand-in", "kafka": "Kafka"}[name]
            bars.append(("%s, %s, plaintext" % (transfer, label.replace("Apache ", "")),
                         tls["%s_plain_%s" % (name, transfer)] / 1e9, kind))
            bars.append(("%s, %s, TLS" % (transfer, label.replace("Apache ", "")),
                         tls["%s_tls_%s" % (name, transfer)] / 1e9, kind))
    bars.append(("AES-256-GCM, one core", tls["aes_256_gcm_one_core"] / 1e9, "limit"))
    bar_chart("docs/bench-tls.svg", "librdkafka over TLS and plaintext", bars)
    print("## Produce and consume over TLS\n")
    print("![TLS figures beside plaintext](bench-tls.svg)\n")
    print("`scripts/bench_tls.sh`: the loopback benchmark's librdkafka client and settings (above),")
    print("1,000,000 messages of 1 KiB produced and then consumed over TLS (`security.protocol=ssl`,")
    print("the broker's certificate checked against its CA) and over plaintext, against three brokers")
    print("in each round: `ferrolog serve` with a PLAINTEXT and an SSL listener (PEM key store, RSA")
    print("2048); the stand-in broker, here also serving TLS with rustls as ferrolog does (same")
    print("read-ahead under TLS), so its TLS column is what the client reaches when the broker costs")
    print("nothing but TLS; and Apache Kafka 4.4 with the same two listeners and key store, started")
    print("with the JVM settings of its own start script. Median of 5 rounds, each from an empty data")
    print("dir, plaintext and TLS taking turns going first. Agreed with OpenSSL's client: %s."
          % "; ".join("%s %s" % ({"ferrolog": "ferrolog", "kafka": "Kafka"}[b], c)
                      for b, c in ciphers.items()))
    print("Goal: TLS at least 0.7× plaintext.\n")
    print("| transfer | broker | plaintext | TLS | TLS ÷ plaintext | broker CPU s/GB, plaintext | broker CPU s/GB, TLS | client CPU s/GB, plaintext | client CPU s/GB, TLS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for transfer in ("produce", "consume"):
        for name, label in brokers:
            plain, secure = "%s_plain_%s" % (name, transfer), "%s_tls_%s" % (name, transfer)
            print("| %s | %s | %s | %s | %.2f× | %.2f | %.2f | %.2f | %.2f |"
                  % (transfer, label, gbs(tls[plain]), gbs(tls[secure]), tls[secure] / tls[plain],
                     tls[plain + "_broker_cpu"], tls[secure + "_broker_cpu"],
                     tls[plain + "_client_cpu"], tls[secure + "_client_cpu"]))
    print()
    print("Over TLS, ferrolog against Kafka 4.4 in the same rounds: produce %.2f×, consume %.2f×;"
          % (tls["ferrolog_tls_produce"] / tls["kafka_tls_produce"],
             tls["ferrolog_tls_consume"] / tls["kafka_tls_consume"]))
    print("broker CPU per gigabyte %.2f× and %.2f× Kafka's. Against the stand-in serving TLS: produce"
          % (tls["ferrolog_tls_produce_broker_cpu"] / tls["kafka_tls_produce_broker_cpu"],
             tls["ferrolog_tls_consume_broker_cpu"] / tls["kafka_tls_consume_broker_cpu"]))
    print("%.0f%%, consume %.0f%%.\n"
          % (100 * tls["ferrolog_tls_produce"] / tls["sink_tls_produce"],
             100 * tls["ferrolog_tls_consume"] / tls["sink_tls_consume"]))

    def ceiling(client, broker):
        return 2e9 / (client + broker)

    def share(transfer):
        """The ratio TLS ÷ plaintext that two shared cores allow with the client's TLS cost as
        measured and the broker's at its plaintext cost (TLS free in the broker)."""
        plain = "ferrolog_plain_" + transfer
        secure = "ferrolog_tls_" + transfer
        return (ceiling(tls[secure + "_client_cpu"], tls[plain + "_broker_cpu"])
                / ceiling(tls[plain + "_client_cpu"], tls[plain + "_broker_cpu"]))

    print("**The goal is not met.** Client and broker share two cores, and the client pays for")
    print("TLS too: librdkafka spent %.2f CPU-s per gigabyte producing over TLS against %.2f in"
          % (tls["ferrolog_tls_produce_client_cpu"], tls["ferrolog_plain_produce_client_cpu"]))
    print("plaintext, and %.2f against %.2f consuming. Even if TLS cost the broker nothing (its"
          % (tls["ferrolog_tls_consume_client_cpu"], tls["ferrolog_plain_consume_client_cpu"]))
    print("plaintext CPU per gigabyte), the two-core ceiling of the loopback section, 2 ÷ (client +")
    print("broker CPU s/GB), would be over TLS %.2f× its plaintext value for produce and %.2f× for"
          % (share("produce"), share("consume")))
    print("consume. Below 0.7× for produce, then, whatever the broker does. For consume the ceiling")
    print("leaves room, but the stand-in, which costs nothing but TLS, reaches %.2f×: as in"
          % (tls["sink_tls_consume"] / tls["sink_plain_consume"]))
    print("plaintext, librdkafka keeps one fetch in flight and takes turns with the broker.")
    print()
    print("What TLS costs the broker: AES-256-GCM over a gigabyte takes %.2f s of one core here"
          % (1e9 / tls["aes_256_gcm_one_core"]))
    print("(`openssl speed -evp aes-256-gcm -bytes 16384`: %s), and sending over TLS cost"
          % gbs(tls["aes_256_gcm_one_core"]))
    print("ferrolog %.2f s/GB more than in plaintext. Fetched bytes go by `pread` into a shared"
          % (tls["ferrolog_tls_consume_broker_cpu"] - tls["ferrolog_plain_consume_broker_cpu"]))
    print("1 MiB buffer as in plaintext's default path, and rustls encrypts them from there into the")
    print("records it writes. Receiving cost %.2f s/GB more, and the stand-in, which only decrypts,"
          % (tls["ferrolog_tls_produce_broker_cpu"] - tls["ferrolog_plain_produce_broker_cpu"]))
    print("%.2f s/GB more: librdkafka writes a gigabyte over TLS in about 300,000 `write` calls of"
          % (tls["sink_tls_produce_broker_cpu"] - tls["sink_plain_produce_broker_cpu"]))
    print("""3.4 KB, so the broker decrypts that many small records and, outrunning its client, is
woken for a few of them at a time. Under TLS each connection reads its socket through a 64 KiB
buffer, because rustls asks for at most 4 KiB at a time: without it the broker made 140,000
`recv` calls per gigabyte produced, with it 53,000, in plaintext 2,700 (`perf stat -e
syscalls:sys_enter_recvfrom` on the broker and `syscalls:sys_enter_write` on the client, by
hand on 2026-12-01).
""")

if __name__ == "__main__":
    main(sys.argv[1])
