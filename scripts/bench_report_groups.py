"""The group rebalance section of docs/benchmarks.md, from scripts/bench_groups.sh's figures.

Run alone (`python3 scripts/bench_report_groups.py target/bench-data/groups.txt`) it prints the
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


def seconds(ms):
    return "%.2f s" % (ms / 1000)


def print_rows(g, prefix, protocol, label):
    """One protocol's rows of a configuration's table."""
    for event, what in (("initial", "50 members start, to the first stable assignment"),
                        ("join", "a 51st joins"), ("leave", "one leaves")):
        ours = g["%sferrolog_%s_%s" % (prefix, protocol, event)]
        theirs = g["%skafka_%s_%s" % (prefix, protocol, event)]
        worst = ""
        if event != "initial":
            worst = " (slowest %s / %s)" % (seconds(g["%sferrolog_%s_%s_max" % (prefix, protocol, event)]),
                                             seconds(g["%skafka_%s_%s_max" % (prefix, protocol, event)]))
        print("| %s, %s | %s | %s | %.2f×%s |"
              % (label, what, seconds(ours), seconds(theirs), ours / theirs, worst))
    ours_cpu = g["%sferrolog_%s_broker_cpu" % (prefix, protocol)]
    theirs_cpu = g["%skafka_%s_broker_cpu" % (prefix, protocol)]
    print("| %s, broker CPU over the run | %.1f s | %.1f s | %.2f× |"
          % (label, ours_cpu, theirs_cpu, ours_cpu / theirs_cpu))


def print_section(path, measured_note=""):
    g = read_figures(path)
    print("## Group rebalances: 50 members\n")
    if measured_note:
        print(measured_note + "\n")
    print("`scripts/bench_groups.sh`: 50 of Kafka's Java consumers (4.4) in one group over a topic")
    print("of 200 partitions (`tools/kafka/apps/GroupRebalanceBench.java`), each polling on its own")
    print("thread in one JVM; the time until the assignment is stable again (every partition owned")
    print("by exactly one member, as their rebalance listeners report, and no member owning two more")
    print("than another) after a 51st member subscribes, and after a member closes (leaving the")
    print("group); five rounds each, medians (and the slowest round). `group.protocol=consumer`")
    print("(KIP-848, the broker's default assignor `uniform`) and `group.protocol=classic` (the")
    print("client's default assignors, so `range`, eager). The same group settings on both brokers:")
    print("Kafka's defaults (a consumer-group heartbeat every 5000 ms, target assignments at most")
    print("every 1000 ms; the classic client's heartbeat every 3000 ms) and")
    print("`group.initial.rebalance.delay.ms=0`; then again with every heartbeat at 200 ms and no")
    print("assignment interval, where the broker's own time shows past the heartbeat's. Each broker")
    print("from an empty data dir; Kafka with its start script's JVM settings (its CPU includes its")
    print("JIT warming up).\n")
    for prefix, title in (("", "Kafka's default heartbeats"),
                          ("fast_", "`fast`: every heartbeat 200 ms, assignment interval 0")):
        if prefix + "ferrolog_consumer_join" not in g:
            continue
        print("**%s.**\n" % title)
        print("| protocol, event | ferrolog | Kafka 4.4 | ferrolog / Kafka |")
        print("|---|---|---|---|")
        for protocol, label in (("consumer", "consumer (KIP-848)"), ("classic", "classic")):
            print_rows(g, prefix, protocol, label)
        print()
    ours, theirs = g["ferrolog_consumer_join"], g["kafka_consumer_join"]
    print("The goal was at most half of Kafka's time for a join and a leave. It is not met, and")
    print("it cannot be on any broker: a member hears of a new assignment only in the answer to")
    print("its own next heartbeat, so a join or a leave takes one heartbeat interval (5 s for")
    print("consumer groups, 3 s for the classic client) plus the round trips of revoking first.")
    print("Both brokers finish within %d ms of that wait (a join: ferrolog %s, Kafka %s)."
          % (max(ours, theirs) - 5000, seconds(ours), seconds(theirs)))
    if "fast_ferrolog_consumer_join" in g:
        print("With 200 ms heartbeats the broker's own share shows: ferrolog takes %.2f× Kafka's"
              % (g["fast_ferrolog_consumer_join"] / g["fast_kafka_consumer_join"]))
        print("time for a join and %.2f× for a leave (consumer protocol), still mostly the"
              % (g["fast_ferrolog_consumer_leave"] / g["fast_kafka_consumer_leave"]))
        print("heartbeat's wait. Where the broker does the work, it shows: 50 consumer-protocol")
        print("members reach their first stable assignment in %.2f× Kafka's time (%.2f× with fast"
              % (g["ferrolog_consumer_initial"] / g["kafka_consumer_initial"],
                 g["fast_ferrolog_consumer_initial"] / g["fast_kafka_consumer_initial"]))
        print("heartbeats), on %.2f× its CPU.\n"
              % (g["ferrolog_consumer_broker_cpu"] / g["kafka_consumer_broker_cpu"]))


if __name__ == "__main__":
    print_section(sys.argv[1])
