#!/usr/bin/env python3
"""tests/apps/kv_udp_check.py - checks a key-value server's UDP front end (docs/protocol.md).

Owns: a minimal stdlib client of the request protocol and the checks test_kv.sh runs against
jiffy-kv and kv-pthread: GET of a preloaded key (reply header and value), GET of a missing key,
SCAN counts, PUT/GET/DEL, SPIN -> UNSUPPORTED, and malformed datagrams (dropped ones get no
reply, header-valid ones get BAD_REQUEST/TOO_LARGE), each followed by a PING that must still work.

usage: kv_udp_check.py PORT KEYS VALUE_SIZE [--quick]   (exit 0 when every check passes)
"""
import socket
import struct
import sys

MAGIC, VERSION = 0x4A46, 1
PING, SPIN, GET, PUT, DEL, SCAN = range(6)
OK, NOT_FOUND, BAD_REQUEST, UNSUPPORTED, SERVER_ERROR, TOO_LARGE = range(6)
REQ = struct.Struct("<HBBBBHIIQQ")   # 32 bytes
RESP = struct.Struct("<HBBBBHIIQQ")  # 32 bytes

port, keys, vsize = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
quick = "--quick" in sys.argv
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(2.0)
next_id = 1000


def fail(msg):
    print("kv_udp_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def request(op, key=b"", value=b"", arg=0, klass=0, version=VERSION, magic=MAGIC, flags=0,
            key_len=None, val_len=None):
    global next_id
    next_id += 1
    hdr = REQ.pack(magic, version, op, klass, flags,
                   len(key) if key_len is None else key_len,
                   len(value) if val_len is None else val_len, 0, next_id, arg)
    return hdr + key + value, next_id


def call(op, key=b"", value=b"", arg=0, **kw):
    dgram, rid = request(op, key, value, arg, **kw)
    sock.sendto(dgram, ("127.0.0.1", port))
    try:
        data = sock.recv(65536)
    except socket.timeout:
        fail("no reply to op %d key %r" % (op, key))
    if len(data) < 32:
        fail("reply shorter than the header: %d bytes" % len(data))
    magic, ver, rop, klass, status, _, plen, _, rid2, result = RESP.unpack(data[:32])
    if magic != MAGIC or ver != VERSION or rop != op or rid2 != rid:
        fail("bad reply header: magic %#x version %d op %d (sent %d) id %d (sent %d)"
             % (magic, ver, rop, op, rid2, rid))
    if plen != len(data) - 32:
        fail("payload_len %d but %d bytes follow the header" % (plen, len(data) - 32))
    if klass != kw.get("klass", 0):
        fail("klass not echoed")
    return status, result, data[32:]


def expect_no_reply(dgram, what):
    sock.sendto(dgram, ("127.0.0.1", port))
    sock.settimeout(0.3)
    try:
        data = sock.recv(65536)
        fail("%s got a reply (%d bytes); it must be dropped" % (what, len(data)))
    except socket.timeout:
        pass
    finally:
        sock.settimeout(2.0)
    ping_ok(what)


def ping_ok(after):
    st, _, _ = call(PING)
    if st != OK:
        fail("PING after %s: status %d" % (after, st))


def key(i):
    return b"key%012u" % i


ping_ok("start")
st, res, val = call(GET, key(0), klass=1)
if st != OK or res != vsize or len(val) != vsize or not val.startswith(key(0)[:vsize]):
    fail("GET key 0: status %d result %d value %r" % (st, res, val[:32]))
st, res, val = call(GET, key(keys - 1))
if st != OK or res != vsize:
    fail("GET last key: status %d result %d" % (st, res))
st, _, _ = call(GET, b"no-such-key")
if st != NOT_FOUND:
    fail("GET missing key: status %d" % st)
st, res, _ = call(SCAN, key(0), arg=100)
if st != OK or res != min(100, keys):
    fail("SCAN 100 from key 0: status %d visited %d" % (st, res))
st, res, _ = call(SCAN, key(keys - 10), arg=100)
if st != OK or res < 10:
    fail("SCAN near the end: status %d visited %d" % (st, res))
print("udp: GET key 0 ok (%d-byte value), SCAN 100 visited %d" % (vsize, 100))
if not quick:
    st, _, _ = call(PUT, b"udp-key", b"udp-value")
    if st != OK:
        fail("PUT: status %d" % st)
    st, res, val = call(GET, b"udp-key")
    if st != OK or val != b"udp-value":
        fail("GET after PUT: status %d value %r" % (st, val))
    st, _, _ = call(DEL, b"udp-key")
    if st != OK:
        fail("DEL: status %d" % st)
    st, _, _ = call(DEL, b"udp-key")
    if st != NOT_FOUND:
        fail("second DEL: status %d" % st)
    st, _, _ = call(SPIN, arg=1000)
    if st != UNSUPPORTED:
        fail("SPIN: status %d (want UNSUPPORTED)" % st)
    st, _, _ = call(9)
    if st != UNSUPPORTED:
        fail("unknown op: status %d" % st)
    # malformed, header readable: an error status
    st, _, _ = call(GET, key(0), version=2)
    if st != BAD_REQUEST:
        fail("version 2: status %d" % st)
    st, _, _ = call(GET, key(0), key_len=5)
    if st != BAD_REQUEST:
        fail("key_len mismatch: status %d" % st)
    st, _, _ = call(GET, key(0), value=b"xx")
    if st != BAD_REQUEST:
        fail("value on a GET: status %d" % st)
    st, _, _ = call(GET, b"k" * 300)
    if st != TOO_LARGE:
        fail("300-byte key: status %d" % st)
    st, _, _ = call(PUT, b"k", b"v" * 1500)
    if st != TOO_LARGE:
        fail("1500-byte value: status %d" % st)
    # limits (docs/security.md): no reply more than 3x its request, a bounded SCAN
    big = b"B" * 1000
    st, _, _ = call(PUT, b"big-key", big)
    if st != OK:
        fail("PUT of a 1000-byte value: status %d" % st)
    st, res, val = call(GET, b"big-key")
    if st != TOO_LARGE or res != 1000 or val:
        fail("GET of a 1000-byte value with a 39-byte request: status %d result %d, %d payload "
             "bytes (want TOO_LARGE, result 1000, none: no reply over 3x the request)"
             % (st, res, len(val)))
    pad = (32 + 1000 + 2) // 3 - 32 - len(b"big-key")  # 3 x request >= reply
    st, res, val = call(GET, b"big-key", value=b"\0" * pad, flags=1)
    if st != OK or val != big:
        fail("padded GET (%d bytes of padding): status %d result %d" % (pad, st, res))
    st, _, _ = call(GET, b"big-key", value=b"\0" * (pad - 2), flags=1)
    if st != TOO_LARGE:
        fail("GET padded 2 bytes short: status %d (want TOO_LARGE)" % st)
    st, _, _ = call(PUT, b"big-key", big, flags=1)
    if st != BAD_REQUEST:
        fail("padding flag on a PUT: status %d (want BAD_REQUEST)" % st)
    st, _, _ = call(GET, b"big-key", flags=2)
    if st != BAD_REQUEST:
        fail("unknown flag 2: status %d (want BAD_REQUEST)" % st)
    st, _, _ = call(DEL, b"big-key")
    st, res, _ = call(SCAN, key(0), arg=10000)
    if st != OK:
        fail("SCAN of 10000 keys (the cap): status %d" % st)
    st, res, _ = call(SCAN, key(0), arg=10001)
    if st != TOO_LARGE or res != 10000:
        fail("SCAN of 10001 keys: status %d result %d (want TOO_LARGE, result 10000)" % (st, res))
    print("udp: replies bounded at 3x the request (padding works), SCAN capped at 10000 keys")
    # malformed, dropped
    expect_no_reply(b"\x46\x4a\x01", "a 3-byte datagram")
    expect_no_reply(b"", "an empty datagram")
    expect_no_reply(b"\x00" * 40, "a wrong magic")
    expect_no_reply(request(GET, key(0))[0] + b"x" * 3000, "a 3 KB datagram")
    print("udp: PUT/GET/DEL, SPIN unsupported, malformed datagrams handled, PING still ok")
print("kv_udp_check: ok")
