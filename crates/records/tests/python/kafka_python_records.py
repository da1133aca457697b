"""Cross-check of ferrolog's record codec against kafka-python's, which works without a broker.

    build DIR   write batches built by kafka-python (every codec, v2 with headers and null
                keys/values, legacy magic 0 and 1) as DIR/<name>.bin, and what they hold as
                DIR/expected.json
    read DIR    decode every DIR/*.bin with kafka-python and print what it holds as JSON

Keys, values and header values are hex strings, or null.
"""

import json
import os
import sys

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000


def sample_records(with_headers):
    records = []
    for i in range(40):
        key = None if i % 7 == 3 else ("key-%d" % i).encode()
        value = None if i % 11 == 5 else (("value-%d-" % i) * (1 + i % 5)).encode()
        headers = []
        if with_headers and i % 3 == 0:
            headers = [("h-%d" % i, ("hv-%d" % i).encode()), ("null-header", None)]
        records.append((i, BASE_TS + i * 3 - (i % 4), key, value, headers))
    return records


def hexify(data):
    return None if data is None else bytes(data).hex()


def describe(offset, timestamp, key, value, headers):
    return {
        "offset": offset,
        "timestamp": timestamp,
        "key": hexify(key),
        "value": hexify(value),
        "headers": [[k, hexify(v)] for k, v in headers],
    }


def build(out_dir):
    expected = {}
    for name, codec in CODECS.items():
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=False,
            producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        records = sample_records(with_headers=True)
        for offset, ts, key, value, headers in records:
            builder.append(offset, ts, key, value, headers)
        write(out_dir, "v2-" + name, builder.build())
        expected["v2-" + name] = [describe(*r) for r in records]
        if name == "zstd":
            continue  # zstd arrived with magic 2
        for magic in (0, 1):
            legacy = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
            records = sample_records(with_headers=False)
            for offset, ts, key, value, _ in records:
                legacy.append(offset, ts if magic == 1 else None, key, value)
            file_name = "legacy-v%d-%s" % (magic, name)
            write(out_dir, file_name, legacy.build())
            expected[file_name] = [
                describe(offset, ts if magic == 1 else -1, key, value, [])
                for offset, ts, key, value, _ in records
            ]
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f)


def write(out_dir, name, data):
    with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
        f.write(bytes(data))


def read(in_dir):
    result = {}
    for file_name in sorted(os.listdir(in_dir)):
        if not file_name.endswith(".bin"):
            continue
        with open(os.path.join(in_dir, file_name), "rb") as f:
            records = MemoryRecords(f.read())
        out = []
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise SystemExit("%s: CRC check failed in kafka-python" % file_name)
            for record in batch:
                headers = [[k, hexify(v)] for k, v in (record.headers or [])]
                out.append({
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "key": hexify(record.key),
                    "value": hexify(record.value),
                    "headers": headers,
                })
        result[file_name[:-4]] = out
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    {"build": build, "read": read}[sys.argv[1]](sys.argv[2])
