"""The share-group section of docs/benchmarks.md, from scripts/bench_share.sh's figures.

Run alone (`python3 scripts/bench_report_share.py target/bench-data/share.txt`) it prints the
section; scripts/bench_report.py includes it when the figures are there.
"""

import sys


def read_figures(path):
    figures = {}
    with open(path) as lines:
        for line in lines:
            name, value = line.split()
            figures[name] = float(value)
    return figures


def print_section(path, note=""):
    f = read_figures(path)
    print("## Share groups: consumers of one partition")
    print()
    print("`scripts/bench_share.sh`: 1, 4 and 16 of Kafka's `KafkaShareConsumer`s (4.4) in one")
    print("share group reading one partition of 2,000,000 records of 100 bytes")
    print("(`tools/kafka/apps/ShareBench.java`, one thread each, implicit acknowledgement: each")
    print("poll accepts the records of the one before), timed from the first record delivered to")
    print("the last. Each broker from an empty data dir with its defaults (a record lock of 30 s,")
    print("2,000 records in flight per share partition, heartbeats every 5 s), the group starting")
    print("at the earliest offset. The broker's CPU is its user + system time over the consuming")
    print("alone (the records are produced before), per GB delivered.")
    if note:
        print()
        print(note)
    print()
    print("| consumers | ferrolog | Kafka 4.4 | ferrolog ÷ Kafka (goal ≥ 1.0×) | broker CPU-s per GB, ferrolog / Kafka | CPU ratio (goal ≤ 0.5×) |")
    print("|---|---|---|---|---|---|")
    for consumers in (1, 4, 16):
        ours = f["ferrolog_%d_records_per_s" % consumers]
        theirs = f["kafka_%d_records_per_s" % consumers]
        ours_cpu = f["ferrolog_%d_cpu_per_gb" % consumers]
        theirs_cpu = f["kafka_%d_cpu_per_gb" % consumers]
        print("| %d | %.0f records/s | %.0f records/s | %.2f× | %.1f / %.1f | %.2f× |"
              % (consumers, ours, theirs, ours / theirs, ours_cpu, theirs_cpu, ours_cpu / theirs_cpu))
    print()


if __name__ == "__main__":
    print_section(sys.argv[1])
