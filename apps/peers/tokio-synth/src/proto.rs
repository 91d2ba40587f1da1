//! The request protocol of docs/protocol.md (C: apps/common/proto.h): 32-byte little-endian
//! request and reply headers, and what the synthetic server answers to each request.

// The whole table of docs/protocol.md is here, including what only clients and tests use.
#![allow(dead_code)]

use crate::spin;

pub const MAGIC: u16 = 0x4a46;
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 32;
/// Larger datagrams are dropped and counted.
pub const MAX_DGRAM: usize = 2048;
pub const MAX_KEY: usize = 256;
pub const MAX_VALUE: usize = 1400;

pub const OP_PING: u8 = 0;
pub const OP_SPIN: u8 = 1;
pub const OP_GET: u8 = 2;
pub const OP_PUT: u8 = 3;
pub const OP_DEL: u8 = 4;
pub const OP_SCAN: u8 = 5;

pub const ST_OK: u8 = 0;
pub const ST_NOT_FOUND: u8 = 1;
pub const ST_BAD_REQUEST: u8 = 2;
pub const ST_UNSUPPORTED: u8 = 3;
pub const ST_SERVER_ERROR: u8 = 4;
pub const ST_TOO_LARGE: u8 = 5;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub magic: u16,
    pub version: u8,
    pub op: u8,
    pub klass: u8,
    pub flags: u8,
    pub key_len: u16,
    pub val_len: u32,
    pub reserved: u32,
    pub id: u64,
    pub arg: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub magic: u16,
    pub version: u8,
    pub op: u8,
    pub klass: u8,
    pub status: u8,
    pub reserved: u16,
    pub payload_len: u32,
    pub reserved2: u32,
    pub id: u64,
    pub result: u64,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

impl Request {
    /// Decodes the header at the start of `b` (at least HEADER_LEN bytes).
    pub fn decode(b: &[u8]) -> Request {
        Request {
            magic: u16_at(b, 0),
            version: b[2],
            op: b[3],
            klass: b[4],
            flags: b[5],
            key_len: u16_at(b, 6),
            val_len: u32_at(b, 8),
            reserved: u32_at(b, 12),
            id: u64_at(b, 16),
            arg: u64_at(b, 24),
        }
    }

    /// Encodes the header (clients and tests).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&self.magic.to_le_bytes());
        b[2] = self.version;
        b[3] = self.op;
        b[4] = self.klass;
        b[5] = self.flags;
        b[6..8].copy_from_slice(&self.key_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.val_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.reserved.to_le_bytes());
        b[16..24].copy_from_slice(&self.id.to_le_bytes());
        b[24..32].copy_from_slice(&self.arg.to_le_bytes());
        b
    }
}

impl Reply {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&self.magic.to_le_bytes());
        b[2] = self.version;
        b[3] = self.op;
        b[4] = self.klass;
        b[5] = self.status;
        b[6..8].copy_from_slice(&self.reserved.to_le_bytes());
        b[8..12].copy_from_slice(&self.payload_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.reserved2.to_le_bytes());
        b[16..24].copy_from_slice(&self.id.to_le_bytes());
        b[24..32].copy_from_slice(&self.result.to_le_bytes());
        b
    }

    /// Decodes a reply header (clients and tests).
    pub fn decode(b: &[u8]) -> Reply {
        Reply {
            magic: u16_at(b, 0),
            version: b[2],
            op: b[3],
            klass: b[4],
            status: b[5],
            reserved: u16_at(b, 6),
            payload_len: u32_at(b, 8),
            reserved2: u32_at(b, 12),
            id: u64_at(b, 16),
            result: u64_at(b, 24),
        }
    }
}

/// Whether the reader drops a datagram of `dgram` bytes: shorter than a header, over
/// MAX_DGRAM, or with a wrong magic.
pub fn malformed(dgram: &[u8]) -> bool {
    dgram.len() < HEADER_LEN || dgram.len() > MAX_DGRAM || u16_at(dgram, 0) != MAGIC
}

/// The reply to a datagram of `n` bytes with header `req` (magic already checked); runs the
/// SPIN loop when asked, on the calling thread. A SPIN over `max_spin_ns` (--max-spin-us) gets
/// TOO_LARGE with result = `max_spin_ns`, so the client learns the cap (apps/common/synth.c).
pub fn handle(req: &Request, n: usize, max_spin_ns: u64) -> Reply {
    let mut rep = Reply {
        magic: MAGIC,
        version: VERSION,
        op: req.op,
        klass: req.klass,
        id: req.id,
        ..Reply::default()
    };
    rep.status = if req.version != VERSION
        || n != HEADER_LEN + req.key_len as usize + req.val_len as usize
    {
        ST_BAD_REQUEST
    } else if req.key_len as usize > MAX_KEY || req.val_len as usize > MAX_VALUE {
        ST_TOO_LARGE
    } else {
        match req.op {
            OP_PING => ST_OK,
            OP_SPIN if req.arg > max_spin_ns => {
                rep.result = max_spin_ns;
                ST_TOO_LARGE
            }
            OP_SPIN => {
                spin::spin_ns(req.arg);
                rep.result = req.arg;
                ST_OK
            }
            // GET, PUT, DEL, SCAN: not served by a synthetic server; unknown ops too.
            _ => ST_UNSUPPORTED,
        }
    };
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    // The byte layouts of docs/protocol.md, field by field.
    #[test]
    fn request_layout() {
        let req = Request {
            magic: MAGIC,
            version: VERSION,
            op: OP_SPIN,
            klass: 1,
            flags: 0,
            key_len: 0x0102,
            val_len: 0x0304_0506,
            reserved: 0,
            id: 0x1122_3344_5566_7788,
            arg: 0x99aa_bbcc_ddee_ff00,
        };
        let want: [u8; 32] = [
            0x46, 0x4a, // 0: magic 0x4a46
            0x01, // 2: version
            0x01, // 3: op SPIN
            0x01, // 4: klass
            0x00, // 5: flags
            0x02, 0x01, // 6: key_len
            0x06, 0x05, 0x04, 0x03, // 8: val_len
            0x00, 0x00, 0x00, 0x00, // 12: reserved
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // 16: id
            0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, // 24: arg
        ];
        assert_eq!(req.encode(), want);
        assert_eq!(Request::decode(&want), req);
    }

    #[test]
    fn reply_layout() {
        let rep = Reply {
            magic: MAGIC,
            version: VERSION,
            op: OP_SCAN,
            klass: 7,
            status: ST_TOO_LARGE,
            reserved: 0,
            payload_len: 0x0a0b_0c0d,
            reserved2: 0,
            id: 0x0102_0304_0506_0708,
            result: 1000,
        };
        let want: [u8; 32] = [
            0x46, 0x4a, // 0: magic
            0x01, // 2: version
            0x05, // 3: op SCAN
            0x07, // 4: klass
            0x05, // 5: status TOO_LARGE
            0x00, 0x00, // 6: reserved
            0x0d, 0x0c, 0x0b, 0x0a, // 8: payload_len
            0x00, 0x00, 0x00, 0x00, // 12: reserved2
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // 16: id
            0xe8, 0x03, 0, 0, 0, 0, 0, 0, // 24: result 1000
        ];
        assert_eq!(rep.encode(), want);
        assert_eq!(Reply::decode(&want), rep);
    }

    #[test]
    fn malformed_datagrams() {
        let ping = Request {
            magic: MAGIC,
            version: VERSION,
            ..Default::default()
        }
        .encode();
        assert!(!malformed(&ping));
        assert!(malformed(&ping[..31]));
        assert!(malformed(&[]));
        let mut bad = ping;
        bad[0] = 0x4a; // byte-swapped magic
        bad[1] = 0x46;
        assert!(malformed(&bad));
        let mut big = vec![0u8; MAX_DGRAM + 1];
        big[..32].copy_from_slice(&ping);
        assert!(malformed(&big));
        assert!(!malformed(&big[..MAX_DGRAM]));
    }

    /// The default --max-spin-us, 1 ms.
    const CAP_NS: u64 = 1_000_000;

    // --max-spin-us: a SPIN of exactly the cap runs; one ns more gets TOO_LARGE with the cap as
    // its result, whatever the cap (1 us .. 10 s) and however large the request.
    #[test]
    fn spin_cap() {
        spin::set_rate(1.0);
        for (cap, arg, status, result) in [
            (1000, 1000, ST_OK, 1000),
            (1000, 1001, ST_TOO_LARGE, 1000),
            (1000, 0, ST_OK, 0),
            (CAP_NS, CAP_NS + 1, ST_TOO_LARGE, CAP_NS),
            (10_000_000_000, 10_000_000_001, ST_TOO_LARGE, 10_000_000_000),
            (10_000_000_000, u64::MAX, ST_TOO_LARGE, 10_000_000_000),
        ] {
            let req = Request {
                magic: MAGIC,
                version: VERSION,
                op: OP_SPIN,
                id: 7,
                arg,
                ..Default::default()
            };
            let rep = handle(&req, HEADER_LEN, cap);
            assert_eq!(
                (rep.status, rep.result),
                (status, result),
                "cap {cap} SPIN {arg}"
            );
        }
    }

    #[test]
    fn statuses() {
        spin::set_rate(1.0); // tiny spins; no calibration needed
        let base = Request {
            magic: MAGIC,
            version: VERSION,
            id: 42,
            klass: 3,
            ..Default::default()
        };
        let k = |op: u8, key_len: u16, val_len: u32, arg: u64| Request {
            op,
            key_len,
            val_len,
            arg,
            ..base
        };
        let cases: &[(&str, Request, usize, u8, u64)] = &[
            ("ping", k(OP_PING, 0, 0, 0), 32, ST_OK, 0),
            ("spin", k(OP_SPIN, 0, 0, 500), 32, ST_OK, 500),
            (
                "spin over the cap",
                k(OP_SPIN, 0, 0, CAP_NS + 1),
                32,
                ST_TOO_LARGE,
                CAP_NS,
            ),
            ("get", k(OP_GET, 15, 0, 0), 47, ST_UNSUPPORTED, 0),
            ("put", k(OP_PUT, 15, 100, 0), 147, ST_UNSUPPORTED, 0),
            ("del", k(OP_DEL, 15, 0, 0), 47, ST_UNSUPPORTED, 0),
            ("scan", k(OP_SCAN, 15, 0, 10), 47, ST_UNSUPPORTED, 0),
            ("unknown op", k(99, 0, 0, 0), 32, ST_UNSUPPORTED, 0),
            (
                "key_len mismatch",
                k(OP_GET, 15, 0, 0),
                32,
                ST_BAD_REQUEST,
                0,
            ),
            ("trailing bytes", k(OP_PING, 0, 0, 0), 35, ST_BAD_REQUEST, 0),
            (
                "bad version",
                Request { version: 2, ..base },
                32,
                ST_BAD_REQUEST,
                0,
            ),
            (
                "key too large",
                k(OP_GET, 257, 0, 0),
                32 + 257,
                ST_TOO_LARGE,
                0,
            ),
        ];
        for (name, req, n, status, result) in cases {
            let rep = handle(req, *n, CAP_NS);
            assert_eq!((rep.status, rep.result), (*status, *result), "{name}");
            assert_eq!(
                (rep.magic, rep.version, rep.op, rep.klass, rep.id),
                (MAGIC, VERSION, req.op, 3, 42),
                "{name}"
            );
        }
    }
}
