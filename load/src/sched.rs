//! load/src/sched.rs - the open-loop schedule. Every request of the run is drawn before the run
//! starts: its intended send time (Poisson arrivals: exponential gaps at --rate, accumulated from
//! time 0, so a late sender never shifts later arrivals), its class and its service time or key.
//! Request id = index in the schedule, so the receiver finds a reply's entry in O(1). This file
//! also builds a request's datagram from its entry.

use crate::proto::{self, Op, Req};
use crate::spec::{Dist, Mix};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

#[derive(Clone, Debug)]
pub enum Workload {
    Ping,
    Spin(Dist),
    Kv {
        mix: Mix,
        keys: u32,
        scan_n: u64,
        value_size: usize,
        /// nominal service ns per class (mix entry), if --service named it
        service: Vec<Option<u64>>,
    },
}

impl Workload {
    pub fn class_names(&self) -> Vec<String> {
        match self {
            Workload::Ping => vec!["all".into()],
            Workload::Spin(d) => d.class_names(),
            Workload::Kv { mix, .. } => mix.class_names(),
        }
    }
}

pub struct Schedule {
    /// intended send time, ns after the start
    pub t: Vec<u64>,
    /// SPIN: service ns; KV: key index; PING: 0
    pub v: Vec<u64>,
    pub class: Vec<u8>,
    pub wl: Workload,
}

impl Schedule {
    /// Draw the whole run: arrivals in [0, duration_ns).
    pub fn build(wl: Workload, rate: f64, duration_ns: u64, seed: u64) -> Result<Schedule, String> {
        let expect = rate * duration_ns as f64 / 1e9;
        if expect > 400e6 {
            return Err(format!(
                "{expect:.0} requests would be scheduled (rate x duration); the limit is 400M"
            ));
        }
        let cap = (expect * 1.01 + 6.0 * expect.sqrt() + 16.0) as usize;
        let mut s = Schedule {
            t: Vec::with_capacity(cap),
            v: Vec::with_capacity(cap),
            class: Vec::with_capacity(cap),
            wl,
        };
        let mut rng = StdRng::seed_from_u64(seed);
        let gap = Exp::new(rate / 1e9).map_err(|e| format!("--rate {rate}: {e}"))?;
        let mut t = 0.0f64;
        loop {
            t += gap.sample(&mut rng);
            if t >= duration_ns as f64 {
                break;
            }
            let (c, v) = match &s.wl {
                Workload::Ping => (0, 0),
                Workload::Spin(d) => d.sample(&mut rng),
                Workload::Kv { mix, keys, .. } => (mix.sample(&mut rng), rng.gen_range(0..*keys) as u64),
            };
            s.t.push(t as u64);
            s.v.push(v);
            s.class.push(c);
        }
        Ok(s)
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    #[inline]
    pub fn op_of(&self, id: usize) -> Op {
        match &self.wl {
            Workload::Ping => Op::Ping,
            Workload::Spin(_) => Op::Spin,
            Workload::Kv { mix, .. } => mix.ops[self.class[id] as usize].0,
        }
    }

    /// The request's service time for slowdowns, if known.
    #[inline]
    pub fn service_ns(&self, id: usize) -> Option<u64> {
        match &self.wl {
            Workload::Ping => None,
            Workload::Spin(_) => Some(self.v[id]),
            Workload::Kv { service, .. } => service[self.class[id] as usize],
        }
    }

    /// Write request `id` into `buf` (at least proto::MAX_DGRAM bytes); return its length.
    #[inline]
    pub fn encode(&self, id: usize, buf: &mut [u8]) -> usize {
        let op = self.op_of(id);
        let mut r = Req { op: op as u8, klass: self.class[id], flags: 0, key_len: 0, val_len: 0, id: id as u64, arg: 0 };
        let mut len = proto::HDR_LEN;
        match &self.wl {
            Workload::Ping => {}
            Workload::Spin(_) => r.arg = self.v[id],
            Workload::Kv { scan_n, value_size, .. } => {
                r.key_len = proto::KEY_LEN as u16;
                proto::encode_key(self.v[id] as u32, &mut buf[len..]);
                len += proto::KEY_LEN;
                match op {
                    Op::Scan => r.arg = *scan_n,
                    Op::Put => {
                        r.val_len = *value_size as u32;
                        // the value: a recognisable pattern, rewritten each time (cheap)
                        for (k, b) in buf[len..len + value_size].iter_mut().enumerate() {
                            *b = b'a' + (k % 26) as u8;
                        }
                        len += value_size;
                    }
                    Op::Get => {
                        // a reply may be at most MAX_AMPLIFICATION x the request: pad the
                        // request for a value of --value-size bytes (none for <= ~100 bytes)
                        let need = (proto::HDR_LEN + value_size).div_ceil(proto::MAX_AMPLIFICATION);
                        if need > len {
                            r.flags = proto::F_PAD;
                            r.val_len = (need - len) as u32;
                            buf[len..need].fill(0);
                            len = need;
                        }
                    }
                    _ => {}
                }
            }
        }
        proto::encode_req(&r, buf);
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_and_order() {
        let s = Schedule::build(Workload::Ping, 100_000.0, 2_000_000_000, 7).unwrap();
        let n = s.len() as f64;
        assert!((n - 200_000.0).abs() < 5.0 * 200_000f64.sqrt(), "n = {n}");
        assert!(s.t.windows(2).all(|w| w[0] <= w[1]));
        assert!(*s.t.last().unwrap() < 2_000_000_000);
        // same seed, same schedule
        let s2 = Schedule::build(Workload::Ping, 100_000.0, 2_000_000_000, 7).unwrap();
        assert_eq!(s.t, s2.t);
    }

    #[test]
    fn encode_kv() {
        let mix = Mix::parse("get:50,scan:25,put:25").unwrap();
        let wl = Workload::Kv { mix, keys: 1000, scan_n: 100, value_size: 10, service: vec![None; 3] };
        let s = Schedule::build(wl, 10_000.0, 100_000_000, 1).unwrap();
        let mut buf = vec![0u8; proto::MAX_DGRAM];
        for id in 0..s.len() {
            let len = s.encode(id, &mut buf);
            let r = proto::decode_req(&buf[..len]).unwrap();
            assert_eq!(r.id, id as u64);
            assert_eq!(r.key_len, 15);
            assert_eq!(&buf[32..35], b"key");
            match s.op_of(id) {
                Op::Scan => assert_eq!(r.arg, 100),
                Op::Put => assert_eq!((r.val_len, len), (10, 32 + 15 + 10)),
                _ => assert_eq!((len, r.flags), (47, 0)),
            }
        }
    }

    #[test]
    fn large_gets_are_padded() {
        // 1000-byte values: a GET must be >= (32 + 1000) / 3 = 344 bytes, padded with F_PAD
        let mix = Mix::parse("get:100").unwrap();
        let wl = Workload::Kv { mix, keys: 1000, scan_n: 100, value_size: 1000, service: vec![None; 3] };
        let s = Schedule::build(wl, 10_000.0, 10_000_000, 1).unwrap();
        let mut buf = vec![0u8; proto::MAX_DGRAM];
        let len = s.encode(0, &mut buf);
        let r = proto::decode_req(&buf[..len]).unwrap();
        assert_eq!((len, r.flags, r.val_len as usize), (344, proto::F_PAD, 344 - 47));
        assert!(len * proto::MAX_AMPLIFICATION >= 32 + 1000);
    }
}
