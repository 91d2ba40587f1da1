#!/usr/bin/env python3
"""udp_client.py - a tiny client of the Jiffy UDP request protocol (docs/protocol.md), for
smoke tests of every server in apps/ (jiffy-synth, jiffy-kv and the pthread/Go/Tokio peers).

It sends --count requests one at a time and checks every reply: magic, version, the echoed
id/op/klass, payload_len against the bytes received, the status (--expect-status) and the
result (SPIN: result == arg; GET OK: result == payload_len; SCAN OK: result <= arg;
--expect-result N: result == N). It prints one summary line with the round-trip times and
exits 0 when every check passed, 1 otherwise (2 for bad usage).

Examples:
  udp_client.py --port 7000 --op ping --count 100
  udp_client.py --port 7000 --op spin --arg 1000 --count 10 --expect-status ok
  udp_client.py --port 7100 --op get --key-index 42 --expect-status ok
  udp_client.py --port 7100 --op scan --key-index 10 --arg 100
  udp_client.py --port 7100 --op put --key mykey --value-size 100
  udp_client.py --port 7000 --garbage           # malformed datagrams, then PING must answer
  udp_client.py --port 7000 --op ping --bad-lengths --expect-status bad_request
  udp_client.py --host ::1 --port 7000 --op ping   # IPv6 (a server started with --bind ::1)
"""
import argparse
import os
import socket
import struct
import sys
import time

MAGIC = 0x4A46
VERSION = 1
HDR = struct.Struct("<HBBBBHIIQQ")  # both headers: 32 bytes, little-endian
assert HDR.size == 32
MAX_DGRAM = 2048

OPS = {"ping": 0, "spin": 1, "get": 2, "put": 3, "del": 4, "scan": 5}
STATUSES = {"ok": 0, "not_found": 1, "bad_request": 2, "unsupported": 3,
            "server_error": 4, "too_large": 5}
STATUS_NAMES = {v: k for k, v in STATUSES.items()}


def key_of(i):
    """The keys servers preload: key%012u."""
    return b"key%012u" % i


def encode_request(op, klass, req_id, arg, key=b"", value=b"", key_len=None, val_len=None,
                   magic=MAGIC, version=VERSION):
    """A request datagram; key_len/val_len override the header's lengths (to make bad ones)."""
    kl = len(key) if key_len is None else key_len
    vl = len(value) if val_len is None else val_len
    return HDR.pack(magic, version, op, klass, 0, kl, vl, 0, req_id, arg) + key + value


def decode_reply(data):
    """(fields dict, payload bytes) of a reply datagram, or None if shorter than a header."""
    if len(data) < HDR.size:
        return None
    (magic, version, op, klass, status, reserved, payload_len, reserved2, req_id,
     result) = HDR.unpack_from(data)
    return (dict(magic=magic, version=version, op=op, klass=klass, status=status,
                 reserved=reserved, payload_len=payload_len, reserved2=reserved2, id=req_id,
                 result=result), data[HDR.size:])


def resolve(host, port):
    """(family, sockaddr) of host, an IPv4 or IPv6 address ("[::1]" too) or a name."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    family, _, _, _, addr = socket.getaddrinfo(host, port, socket.AF_UNSPEC,
                                               socket.SOCK_DGRAM)[0]
    return family, addr


class Client:
    def __init__(self, host, port, timeout):
        family, self.addr = resolve(host, port)
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.settimeout(timeout)
        self.timeout = timeout
        self.next_id = int.from_bytes(os.urandom(4), "little") << 16

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def call(self, datagram, req_id):
        """Send one datagram and wait for the reply carrying req_id (stale replies skipped).
        Returns (reply fields, payload, rtt in seconds) or None on timeout."""
        t0 = time.perf_counter()
        self.sock.sendto(datagram, self.addr)
        deadline = t0 + self.timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data, _ = self.sock.recvfrom(65536)
            except socket.timeout:
                return None
            rtt = time.perf_counter() - t0
            dec = decode_reply(data)
            if dec is not None and dec[0]["id"] == req_id:
                return dec[0], dec[1], rtt

    def expect_silence(self, wait):
        """True if nothing at all arrives within wait seconds."""
        self.sock.settimeout(wait)
        try:
            self.sock.recvfrom(65536)
            return False
        except socket.timeout:
            return True


def check_reply(rep, payload, op, klass, req_id, arg, expect_status, expect_result):
    """List of problems with one reply (empty when it is right)."""
    bad = []
    if rep["magic"] != MAGIC:
        bad.append("magic %#x" % rep["magic"])
    if rep["version"] != VERSION:
        bad.append("version %d" % rep["version"])
    if rep["id"] != req_id or rep["op"] != op or rep["klass"] != klass:
        bad.append("echo id/op/klass %d/%d/%d, sent %d/%d/%d" %
                   (rep["id"], rep["op"], rep["klass"], req_id, op, klass))
    if rep["payload_len"] != len(payload):
        bad.append("payload_len %d but %d bytes follow" % (rep["payload_len"], len(payload)))
    st = rep["status"]
    if expect_status is not None and st != expect_status:
        bad.append("status %s, expected %s" % (STATUS_NAMES.get(st, st),
                                               STATUS_NAMES[expect_status]))
    if expect_result is not None:
        if rep["result"] != expect_result:
            bad.append("result %d, expected %d" % (rep["result"], expect_result))
    elif st == STATUSES["ok"]:
        if op == OPS["spin"] and rep["result"] != arg:
            bad.append("SPIN result %d != arg %d" % (rep["result"], arg))
        if op == OPS["get"] and rep["result"] != rep["payload_len"]:
            bad.append("GET result %d != payload_len %d" % (rep["result"], rep["payload_len"]))
        if op == OPS["scan"] and rep["result"] > arg:
            bad.append("SCAN visited %d > arg %d" % (rep["result"], arg))
    return bad


def garbage_datagrams():
    """Malformed datagrams every server must drop without replying (docs/protocol.md)."""
    good = encode_request(OPS["ping"], 0, 0, 0)
    big = bytearray(MAX_DGRAM + 1)
    big[:HDR.size] = good
    return [
        ("empty", b""),
        ("1 byte", b"\x46"),
        ("31 bytes", good[:31]),
        ("bad magic", encode_request(OPS["ping"], 0, 1, 0, magic=0x1234)),
        ("byte-swapped magic", encode_request(OPS["ping"], 0, 2, 0, magic=0x464A)),
        ("2049 bytes", bytes(big)),
        ("4000 bytes", bytes(big) + bytes(4000 - len(big))),
        ("random 64", os.urandom(64)),
    ]


def percentile(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, max(0, int(round(p / 100.0 * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1",
                    help="the server's address: IPv4, IPv6 (::1 or [::1]) or a name "
                         "(default 127.0.0.1)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--op", choices=sorted(OPS, key=OPS.get), default="ping")
    ap.add_argument("--arg", type=int, default=0, help="SPIN: ns of service; SCAN: keys")
    ap.add_argument("--klass", type=int, default=0, help="request class, echoed (0..255)")
    ap.add_argument("--key", help="key bytes (GET/PUT/DEL/SCAN); default key%%012u of --key-index")
    ap.add_argument("--key-index", type=int, default=0)
    ap.add_argument("--key-size", type=int, help="send a key of this many bytes instead")
    ap.add_argument("--value-size", type=int, default=0, help="PUT: value bytes")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds per reply")
    ap.add_argument("--expect-status", choices=list(STATUSES) + ["any"], default="ok")
    ap.add_argument("--expect-result", type=int)
    ap.add_argument("--bad-lengths", action="store_true",
                    help="claim 10 more key bytes than sent (servers answer BAD_REQUEST)")
    ap.add_argument("--garbage", action="store_true",
                    help="send malformed datagrams, check none is answered, then PING")
    ap.add_argument("--quiet", action="store_true", help="print only failures")
    a = ap.parse_args()
    if not 0 <= a.klass <= 255 or a.count < 0 or not 0 <= a.arg < 1 << 64:
        ap.error("--klass must be 0..255, --count >= 0, --arg a u64")

    try:
        cl = Client(a.host, a.port, a.timeout)
    except (OSError, OverflowError) as e:  # socket.gaierror is an OSError
        ap.error("--host %r --port %d: %s" % (a.host, a.port, e))
    failures = 0

    if a.garbage:
        for name, dgram in garbage_datagrams():
            cl.sock.sendto(dgram, cl.addr)
        if not cl.expect_silence(0.3):
            print("udp_client: FAIL: a malformed datagram got a reply", file=sys.stderr)
            failures += 1
        rid = cl.new_id()
        got = cl.call(encode_request(OPS["ping"], 0, rid, 0), rid)
        if got is None:
            print("udp_client: FAIL: no PING reply after the malformed datagrams",
                  file=sys.stderr)
            failures += 1
        else:
            for p in check_reply(got[0], got[1], OPS["ping"], 0, rid, 0, STATUSES["ok"], None):
                print("udp_client: FAIL: PING after garbage: " + p, file=sys.stderr)
                failures += 1
        if not a.quiet:
            print("udp_client: garbage: sent %d malformed datagrams, %s" %
                  (len(garbage_datagrams()), "server still answers PING" if not failures
                   else "FAILED"))
        if a.count == 1 and a.op == "ping":  # --garbage alone: done
            return 1 if failures else 0

    op = OPS[a.op]
    key = b""
    if a.op in ("get", "put", "del", "scan"):
        key = (b"k" * a.key_size if a.key_size is not None
               else a.key.encode() if a.key is not None else key_of(a.key_index))
    value = bytes((i * 7) & 0xFF for i in range(a.value_size)) if a.op == "put" else b""
    expect_status = None if a.expect_status == "any" else STATUSES[a.expect_status]
    key_len = len(key) + 10 if a.bad_lengths else None

    rtts, statuses, lost = [], {}, 0
    for _ in range(a.count):
        rid = cl.new_id()
        got = cl.call(encode_request(op, a.klass, rid, a.arg, key, value, key_len=key_len), rid)
        if got is None:
            lost += 1
            failures += 1
            print("udp_client: FAIL: id %d: no reply within %.1f s" % (rid, a.timeout),
                  file=sys.stderr)
            continue
        rep, payload, rtt = got
        rtts.append(rtt)
        name = STATUS_NAMES.get(rep["status"], str(rep["status"]))
        statuses[name] = statuses.get(name, 0) + 1
        for p in check_reply(rep, payload, op, a.klass, rid, a.arg, expect_status,
                             a.expect_result):
            failures += 1
            print("udp_client: FAIL: id %d: %s" % (rid, p), file=sys.stderr)

    if a.count and (not a.quiet or failures):
        us = sorted(r * 1e6 for r in rtts)
        print("udp_client: op=%s arg=%d sent=%d replies=%d lost=%d statuses=%s "
              "rtt_us min=%.1f p50=%.1f p99=%.1f max=%.1f%s" %
              (a.op, a.arg, a.count, len(rtts), lost,
               ",".join("%s:%d" % kv for kv in sorted(statuses.items())) or "-",
               percentile(us, 0), percentile(us, 50), percentile(us, 99), percentile(us, 100),
               " FAILED" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
