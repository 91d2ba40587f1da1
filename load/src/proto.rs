//! load/src/proto.rs - the Jiffy UDP request protocol (docs/protocol.md), the Rust side.
//! apps/common/proto.h is the C side; the two must agree byte for byte. This file owns the
//! wire encoding of requests and the decoding of replies, and its tests pin the exact bytes of
//! the tables in docs/protocol.md.
#![allow(dead_code)] // the whole wire definition is kept, used or not

pub const MAGIC: u16 = 0x4a46;
pub const VERSION: u8 = 1;
pub const HDR_LEN: usize = 32;
pub const MAX_DGRAM: usize = 2048;
pub const MAX_KEY: usize = 256;
pub const MAX_VALUE: usize = 1400;
pub const KEY_LEN: usize = 15; // "key%012u"
/// No reply is more than this many times its request (docs/protocol.md): a GET of a large value
/// pads its request (F_PAD) so the server may answer it.
pub const MAX_AMPLIFICATION: usize = 3;
/// jp_req.flags: the val_len bytes after the key are padding (not on PUT).
pub const F_PAD: u8 = 0x01;

/// enum jp_op
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Ping = 0,
    Spin = 1,
    Get = 2,
    Put = 3,
    Del = 4,
    Scan = 5,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Ping => "ping",
            Op::Spin => "spin",
            Op::Get => "get",
            Op::Put => "put",
            Op::Del => "del",
            Op::Scan => "scan",
        }
    }
}

/// enum jp_status
pub const STATUS_OK: u8 = 0;
pub const STATUS_NOT_FOUND: u8 = 1;
pub const STATUS_BAD_REQUEST: u8 = 2;
pub const STATUS_UNSUPPORTED: u8 = 3;
pub const STATUS_SERVER_ERROR: u8 = 4;
pub const STATUS_TOO_LARGE: u8 = 5;
pub const STATUS_NAMES: [&str; 6] = [
    "ok",
    "not_found",
    "bad_request",
    "unsupported",
    "server_error",
    "too_large",
];

/// A request header (struct jp_req).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    pub op: u8,
    pub klass: u8,
    pub flags: u8,
    pub key_len: u16,
    pub val_len: u32,
    pub id: u64,
    pub arg: u64,
}

/// Write the 32-byte request header into `buf[..32]`.
pub fn encode_req(r: &Req, buf: &mut [u8]) {
    let b = &mut buf[..HDR_LEN];
    b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
    b[2] = VERSION;
    b[3] = r.op;
    b[4] = r.klass;
    b[5] = r.flags;
    b[6..8].copy_from_slice(&r.key_len.to_le_bytes());
    b[8..12].copy_from_slice(&r.val_len.to_le_bytes());
    b[12..16].copy_from_slice(&0u32.to_le_bytes());
    b[16..24].copy_from_slice(&r.id.to_le_bytes());
    b[24..32].copy_from_slice(&r.arg.to_le_bytes());
}

/// Write "key%012u" (15 bytes) into `buf`.
pub fn encode_key(i: u32, buf: &mut [u8]) {
    buf[0..3].copy_from_slice(b"key");
    let mut v = i;
    for k in (3..KEY_LEN).rev() {
        buf[k] = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// A reply header (struct jp_resp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resp {
    pub op: u8,
    pub klass: u8,
    pub status: u8,
    pub payload_len: u32,
    pub id: u64,
    pub result: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Short,
    BadMagic,
}

fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}
fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Decode a reply datagram. A wrong magic or version is `BadMagic`.
pub fn decode_resp(b: &[u8]) -> Result<Resp, DecodeError> {
    if b.len() < HDR_LEN {
        return Err(DecodeError::Short);
    }
    if le16(&b[0..2]) != MAGIC || b[2] != VERSION {
        return Err(DecodeError::BadMagic);
    }
    Ok(Resp {
        op: b[3],
        klass: b[4],
        status: b[5],
        payload_len: le32(&b[8..12]),
        id: le64(&b[16..24]),
        result: le64(&b[24..32]),
    })
}

/// Decode a request header (used by the tests and a loopback self-check).
#[allow(dead_code)]
pub fn decode_req(b: &[u8]) -> Result<Req, DecodeError> {
    if b.len() < HDR_LEN {
        return Err(DecodeError::Short);
    }
    if le16(&b[0..2]) != MAGIC || b[2] != VERSION {
        return Err(DecodeError::BadMagic);
    }
    Ok(Req {
        op: b[3],
        klass: b[4],
        flags: b[5],
        key_len: le16(&b[6..8]),
        val_len: le32(&b[8..12]),
        id: le64(&b[16..24]),
        arg: le64(&b[24..32]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_match_protocol_table() {
        // SPIN, class 1, id 0x0102030405060708, arg 100000 ns (0x186a0).
        let r = Req {
            op: Op::Spin as u8,
            klass: 1,
            flags: 0,
            key_len: 0,
            val_len: 0,
            id: 0x0102_0304_0506_0708,
            arg: 100_000,
        };
        let mut b = [0xffu8; 32];
        encode_req(&r, &mut b);
        let want: [u8; 32] = [
            0x46, 0x4a, // magic 0x4a46, little-endian
            0x01, // version
            0x01, // op SPIN
            0x01, // klass
            0x00, // flags
            0x00, 0x00, // key_len
            0x00, 0x00, 0x00, 0x00, // val_len
            0x00, 0x00, 0x00, 0x00, // reserved
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // id
            0xa0, 0x86, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, // arg
        ];
        assert_eq!(b, want);
        assert_eq!(decode_req(&b).unwrap(), r);
    }

    #[test]
    fn put_request_lengths() {
        // PUT with a 15-byte key and a 300-byte value: key_len at 6, val_len at 8.
        let r = Req {
            op: Op::Put as u8,
            klass: 2,
            flags: 0,
            key_len: 15,
            val_len: 300,
            id: 7,
            arg: 0,
        };
        let mut b = [0u8; 32];
        encode_req(&r, &mut b);
        assert_eq!(&b[3..12], &[3, 2, 0, 15, 0, 0x2c, 0x01, 0, 0]);
        assert_eq!(&b[16..24], &[7, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn op_codes() {
        assert_eq!(Op::Ping as u8, 0);
        assert_eq!(Op::Spin as u8, 1);
        assert_eq!(Op::Get as u8, 2);
        assert_eq!(Op::Put as u8, 3);
        assert_eq!(Op::Del as u8, 4);
        assert_eq!(Op::Scan as u8, 5);
    }

    #[test]
    fn reply_bytes_match_protocol_table() {
        let b: [u8; 32] = [
            0x46, 0x4a, // magic
            0x01, // version
            0x02, // op GET
            0x00, // klass
            0x01, // status NOT_FOUND
            0x00, 0x00, // reserved
            0x40, 0x00, 0x00, 0x00, // payload_len 64
            0x00, 0x00, 0x00, 0x00, // reserved2
            0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, // id
            0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // result 42
        ];
        let r = decode_resp(&b).unwrap();
        assert_eq!(
            r,
            Resp {
                op: 2,
                klass: 0,
                status: STATUS_NOT_FOUND,
                payload_len: 64,
                id: 0x0123_4567_89ab_cdef,
                result: 42
            }
        );
    }

    #[test]
    fn reply_errors() {
        let mut b = [0u8; 32];
        assert_eq!(decode_resp(&b[..31]), Err(DecodeError::Short));
        assert_eq!(decode_resp(&b), Err(DecodeError::BadMagic));
        b[0] = 0x4a; // byte-swapped magic is wrong
        b[1] = 0x46;
        b[2] = 1;
        assert_eq!(decode_resp(&b), Err(DecodeError::BadMagic));
        b[0] = 0x46;
        b[1] = 0x4a;
        b[2] = 2; // wrong version
        assert_eq!(decode_resp(&b), Err(DecodeError::BadMagic));
        b[2] = 1;
        assert!(decode_resp(&b).is_ok());
    }

    #[test]
    fn keys() {
        let mut k = [0u8; KEY_LEN];
        encode_key(42, &mut k);
        assert_eq!(&k, b"key000000000042");
        encode_key(u32::MAX, &mut k);
        assert_eq!(&k, b"key004294967295");
    }

    #[test]
    fn status_codes() {
        assert_eq!(STATUS_OK, 0);
        assert_eq!(STATUS_BAD_REQUEST, 2);
        assert_eq!(STATUS_UNSUPPORTED, 3);
        assert_eq!(STATUS_SERVER_ERROR, 4);
        assert_eq!(STATUS_TOO_LARGE, 5);
        assert_eq!(STATUS_NAMES.len(), 6);
    }
}
