/*
 * apps/common/proto.h - the compact binary UDP protocol shared by every server (jiffy-kv,
 * jiffy-synth, the pthread/Go/Tokio peers) and the load generator (load/, Rust). The format is
 * specified in docs/protocol.md; this header and load/src/proto.rs must agree byte for byte.
 *
 * One request per datagram, one reply per request. All integers little-endian.
 * Request:  struct jp_req (32 bytes), then key_len key bytes, then val_len value bytes (PUT).
 * Reply:    struct jp_resp (32 bytes), then payload_len bytes (GET: the value).
 */
#ifndef JIFFY_APPS_PROTO_H
#define JIFFY_APPS_PROTO_H

#include <stdint.h>

#define JP_MAGIC 0x4a46u /* "FJ" on the wire: bytes 0x46 0x4a */
#define JP_VERSION 1u
#define JP_MAX_DGRAM 2048u /* largest request a server accepts; larger ones are dropped+counted */
#define JP_MAX_KEY 256u
#define JP_MAX_VALUE 1400u /* PUT value and GET payload */
/* No reply is more than JP_MAX_AMPLIFICATION times its request's size (a GET that would be gets
 * TOO_LARGE with result = the value's length; the client may ask again with padding), so a
 * spoofed source address cannot turn the server into an amplifier (docs/security.md). */
#define JP_MAX_AMPLIFICATION 3u

/* jp_req.flags */
#define JP_F_PAD 0x01u /* the val_len bytes after the key are padding, ignored (not on PUT) */

enum jp_op {
	JP_PING = 0, /* no work: measures the server's fixed cost */
	JP_SPIN = 1, /* synthetic: compute for arg nanoseconds (calibrated loop, CPU time) */
	JP_GET = 2,  /* key -> value */
	JP_PUT = 3,  /* key, value */
	JP_DEL = 4,  /* key */
	JP_SCAN = 5, /* iterate arg keys from key (or from the first key >= key) */
};

enum jp_status {
	JP_OK = 0,
	JP_NOT_FOUND = 1,
	JP_BAD_REQUEST = 2, /* malformed: bad magic/version/lengths (reply only if id is readable) */
	JP_UNSUPPORTED = 3, /* op not served by this server */
	JP_SERVER_ERROR = 4,
	JP_TOO_LARGE = 5,   /* key or value over the limits above */
};

struct jp_req {
	uint16_t magic;   /* JP_MAGIC */
	uint8_t version;  /* JP_VERSION */
	uint8_t op;       /* enum jp_op */
	uint8_t klass;    /* request class chosen by the client (e.g. 0 short, 1 long); echoed */
	uint8_t flags;    /* 0, or JP_F_PAD */
	uint16_t key_len; /* bytes of key after the header */
	uint32_t val_len; /* bytes of value after the key (PUT only) */
	uint32_t reserved;
	uint64_t id;  /* echoed */
	uint64_t arg; /* SPIN: service time in ns; SCAN: number of keys; otherwise 0 */
};

struct jp_resp {
	uint16_t magic;
	uint8_t version;
	uint8_t op;     /* echoed */
	uint8_t klass;  /* echoed */
	uint8_t status; /* enum jp_status */
	uint16_t reserved;
	uint32_t payload_len;
	uint32_t reserved2;
	uint64_t id;     /* echoed */
	uint64_t result; /* GET: value length; SCAN: keys visited; SPIN: ns computed; else 0 */
};

_Static_assert(sizeof(struct jp_req) == 32, "jp_req is 32 bytes on the wire");
_Static_assert(sizeof(struct jp_resp) == 32, "jp_resp is 32 bytes on the wire");

/* Keys the servers preload and the load generator asks for: jp_key(i) = "key%012u". */
#define JP_KEY_FMT "key%012u"
#define JP_KEY_LEN 15

#endif /* JIFFY_APPS_PROTO_H */
