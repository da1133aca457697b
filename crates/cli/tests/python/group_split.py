"""The rebalance scenario both group scripts run, whatever the client: two consumers split a
6-partition topic, a third joins, one leaves, and 1,500 messages produced across those moves
must each be read exactly once (every consumer commits after every poll).

`consume(name, stop, record)` runs one consumer in the group until `stop[name]` is set, calling
`record(name, messages, assigned)` after each poll with the (partition, offset) pairs it read
and its current assignment, and committing them before it polls again.
"""

import threading
import time

PARTITIONS = 6


def run_split(topic, produce, consume):
    seen = []
    lock = threading.Lock()
    stop = {}
    assignments = {}

    def record(name, messages, assigned):
        with lock:
            seen.extend((partition, offset, name) for partition, offset in messages)
            assignments[name] = sorted(assigned)

    def start(name):
        thread = threading.Thread(target=consume, args=(name, stop, record))
        thread.start()
        return thread

    def wait_for(names, partitions_each):
        deadline = time.time() + 60
        while time.time() < deadline:
            with lock:
                sizes = [len(assignments.get(n, [])) for n in names]
                union = set().union(*(assignments.get(n, []) for n in names))
            if sizes == partitions_each and union == set(range(PARTITIONS)):
                return
            time.sleep(0.1)
        raise AssertionError("no balanced assignment for %s: %s" % (names, assignments))

    produce(topic, 600, PARTITIONS)
    threads = {name: start(name) for name in ["a", "b"]}
    wait_for(["a", "b"], [3, 3])
    produce(topic, 300, PARTITIONS, start=600)
    threads["c"] = start("c")
    wait_for(["a", "b", "c"], [2, 2, 2])
    produce(topic, 300, PARTITIONS, start=900)
    stop["a"] = True
    threads["a"].join()
    with lock:
        assignments.pop("a")
    wait_for(["b", "c"], [3, 3])
    produce(topic, 300, PARTITIONS, start=1200)
    deadline = time.time() + 60
    while time.time() < deadline:
        with lock:
            if len(seen) >= 1500:
                break
        time.sleep(0.1)
    time.sleep(1)
    for name in ["b", "c"]:
        stop[name] = True
        threads[name].join()
    keys = [(p, o) for p, o, _ in seen]
    assert len(set(keys)) == 1500, ("distinct messages", len(set(keys)))
    assert len(keys) == 1500, ("messages read twice", len(keys) - len(set(keys)))
    print("split ok: 1500 messages, each once, across %s" % sorted({n for _, _, n in seen}))
