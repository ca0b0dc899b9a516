#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/) that are
made of text: HTTP requests, request bodies, Redis replies, schedule specs,
and values. The SQLite seeds are a database the store wrote
(//tests/fuzz:make_sqlite_seed, store.db), the same taken back to schema
version 15 (store-v15.db: the statements of DQ_WITHOUT_TOPIC_COUNTS in
tests/sqlite/sqlite_files_test.cc, then PRAGMA user_version = 15 and
VACUUM, so that every open runs the upgrade steps after 15), an empty file
and a text file; the URL
seeds are inputs of random bytes (the target builds a URL of its choices)
that today's redaction passes.

  tools/fuzz/make_seeds.py        # rewrites the seeds below

The targets split their input with libFuzzer's FuzzedDataProvider, which
takes integers from the input's end and strings from its start (a string
ends at a backslash followed by another byte; two backslashes are one). The
helpers below lay seeds out that way.
"""
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fdp_string(text: bytes) -> bytes:
    """A FuzzedDataProvider string: backslashes doubled, then the end."""
    return text.replace(b"\\", b"\\\\") + b"\\;"


def fdp_tail(*values: int) -> bytes:
    """Integers read one byte each from the end, first value last."""
    return bytes(v & 0xFF for v in reversed(values))


# --- http: a request, then the cuts (uint16 each), then their count.
def http_seed(request: bytes, cuts=()):
    tail = b""
    for cut in reversed(cuts):
        tail += struct.pack("<H", cut)  # read high byte first, from the end
    return request + tail + bytes([len(cuts)])


def http_seeds():
    get = b"GET /v1/topics/mail/stats?x=1&y=a%20b HTTP/1.1\r\nHost: h\r\n\r\n"
    post = (b"POST /v1/topics/mail/jobs HTTP/1.1\r\nHost: h\r\n"
            b"Authorization: Bearer t\r\nContent-Length: 13\r\n\r\n"
            b'{"payload":1}')
    chunked = (b"POST /v1/leases/ack HTTP/1.1\r\nHost: h\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"lea\r\n"
               b"0\r\n\r\n")
    expect = (b"PUT /v1/topics/mail/limit HTTP/1.1\r\nHost: h\r\n"
              b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}")
    write("http", "get", http_seed(get))
    write("http", "get_cut", http_seed(get, [3, 20, 40]))
    write("http", "post", http_seed(post, [60]))
    write("http", "pipelined", http_seed(get + post + get, [10, 70, 120]))
    write("http", "chunked", http_seed(chunked, [50, 75, 80]))
    write("http", "expect", http_seed(expect, [40]))
    write("http", "head_http10",
          http_seed(b"HEAD /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
    write("http", "too_large",
          http_seed(b"POST /x HTTP/1.1\r\nContent-Length: 300\r\n\r\n" +
                    b"a" * 300, [30]))
    write("http", "no_length", http_seed(b"POST /x HTTP/1.1\r\nHost: h\r\n\r\n"))
    write("http", "empty_lines", http_seed(b"\r\n\r\n\n" + get, [2]))


# --- json: the whole input is a body; a job is made of its end.
def json_seeds():
    bodies = {
        "ack_plain": b'{"leases":[{"id":"a","token":"12"},{"token":7,"id":"b"}]}',
        "ack_spaces": b' { "leases" : [ { "id" : "job-1" , "token" : 18446744073709551615 } ] } ',
        "ack_escape": b'{"leases":[{"id":"a\\u00e9","token":"1"}]}',
        "ack_bad_token": b'{"leases":[{"id":"a","token":"+1"}]}',
        "ack_dup": b'{"leases":[{"id":"a","id":"b","token":1}]}',
        "job_options": (b'{"id":"j","delay_ms":1500,"run_at":"2026-12-01T10:00:00Z",'
                        b'"ttr_ms":60000,"priority":-3,"max_attempts":5,'
                        b'"backoff":"exp:1s:10m","replace":true,"topic":"t",'
                        b'"payload":"x"}'),
        "limit": b'{"rate":50,"period_ms":1000,"burst":5,"concurrency":10}',
        "payload_base64": b'{"payload_base64":"AAEC/w==","topic":"t"}',
        "empty": b"",
        "nested": b'{"leases":[[[[{"id":"a"}]]]]}',
    }
    for name, body in bodies.items():
        write("json", name, body)


# --- redis: RESP replies (a FuzzedDataProvider string), then a job.
def pack_int(v):
    if 0 <= v <= 0x7F:
        return bytes([v])
    if -32 <= v < 0:
        return struct.pack("b", v)
    if 0 <= v <= 0xFFFFFFFF:
        return b"\xce" + struct.pack(">I", v)
    return b"\xd3" + struct.pack(">q", v)


def pack_str(s: bytes):
    assert len(s) < 32
    return bytes([0xA0 | len(s)]) + s


def record(state, reserved=True, extras=False):
    r = pack_str(b"mail") + pack_int(state)
    r += pack_int(0) + pack_int(3) + pack_int(60_000_000) + pack_int(1)
    r += pack_int(1_000_000) + pack_int(600_000_000)
    r += pack_int(1_767_225_600_000_000) * 2 + pack_int(7) + pack_str(b"{}")
    if reserved:
        r += pack_int(1) + pack_int(1_767_225_660_000_000) + pack_int(42)
        r += pack_str(b"")
    if extras:
        r += b"\xc0" + b"\xc0" + pack_int(300_000_000)
    return r


def bulk(b: bytes):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def redis_seeds():
    leased = record(2)
    replies = {
        "reserve": b"*2\r\n" + bulk(b"OK") + b"*2\r\n" + bulk(leased) + bulk(b"job-1"),
        "snapshots": (b"*3\r\n+OK\r\n*2\r\n" + bulk(b"job-1") + bulk(record(1, False)) +
                      b"*2\r\n" + bulk(b"job-2") + bulk(record(3, True, True))),
        "transition": (b"*4\r\n" + bulk(b"promoted") + bulk(b"job-1") + bulk(b"mail") +
                       b":2\r\n"),
        "stale": b"*1\r\n" + bulk(b"STALE"),
        "numbers": b"*3\r\n:-5\r\n" + bulk(b"1e+15") + b"$-1\r\n",
        "error": b"-NOSCRIPT No matching script\r\n",
    }
    for name, resp in replies.items():
        write("redis", name, fdp_string(resp) + bytes(range(40)))


# --- schedule: a spec, then times and choices from the end.
def schedule_seeds():
    specs = ["0 3 * * *", "*/15 9-17 * * mon-fri", "30 2 * * *", "0 0 29 2 *",
             "0 0 30 2 *", "@every 90s", "@every 1h30m", "@hourly", "@weekly",
             "0 30 1 * * sun", "0 0 1,15 * 5", "59 23 31 12 *", "*/7 * * * * *"]
    for i, spec in enumerate(specs):
        tail = bytes((i * 37 + k * 11) & 0xFF for k in range(48))
        write("schedule", "spec%02d" % i, fdp_string(spec.encode()) + tail)


# --- values: a text, then numbers from the end.
def values_seeds():
    texts = ["90s", "1h30m", "250ms", "0s", "fixed:10s", "exp:1s:10m", "exp:500ms",
             "2026-12-01T10:00:00Z", "2026-12-01T11:00:00.123+01:00", "42",
             "h\xc3\xa9llo", "a\nb\tc\x01", "inf", "-1s", "9999-12-31T23:59:59.999Z"]
    for i, text in enumerate(texts):
        tail = bytes((i * 53 + k * 7) & 0xFF for k in range(48))
        write("values", "text%02d" % i, fdp_string(text.encode("latin-1")) + tail)


if __name__ == "__main__":
    http_seeds()
    json_seeds()
    redis_seeds()
    schedule_seeds()
    values_seeds()
