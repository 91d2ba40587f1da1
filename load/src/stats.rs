//! load/src/stats.rs - what the receiver records: per-class latency and slowdown histograms
//! (HdrHistogram, 3 significant digits), counts of replies, losses, errors and malformed replies,
//! and the sender's lag histogram. It owns the reply bookkeeping (id -> schedule entry, duplicate
//! detection) and the end-of-run accounting of lost requests.

use crate::proto::{self, Resp};
use crate::sched::Schedule;
use hdrhistogram::Histogram;

/// Slowdowns are recorded in thousandths (fixed point) so the histogram keeps 3 decimals.
pub const SLOW_SCALE: f64 = 1000.0;

pub fn lat_hist() -> Histogram<u64> {
    // 1 ns .. 1 hour, 3 significant digits
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

pub fn slow_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000_000_000, 3).expect("histogram bounds")
}

pub struct ClassStats {
    pub lat: Histogram<u64>,
    pub slow: Histogram<u64>,
    pub lat_sum_ns: u128,
    /// measured requests: replies + lost
    pub count: u64,
    pub replies: u64,
    pub lost: u64,
    pub errors: u64,
    /// scheduled inside the measured window
    pub scheduled: u64,
    /// replies received inside the measured window (any request): the achieved throughput
    pub replies_in_window: u64,
}

impl ClassStats {
    pub fn new() -> ClassStats {
        ClassStats {
            lat: lat_hist(),
            slow: slow_hist(),
            lat_sum_ns: 0,
            count: 0,
            replies: 0,
            lost: 0,
            errors: 0,
            scheduled: 0,
            replies_in_window: 0,
        }
    }

    fn record(&mut self, lat_ns: u64, svc_ns: Option<u64>) {
        self.lat.saturating_record(lat_ns.max(1));
        self.lat_sum_ns += lat_ns as u128;
        self.count += 1;
        if let Some(s) = svc_ns {
            let sd = lat_ns as f64 / s.max(1) as f64;
            self.slow.saturating_record(((sd * SLOW_SCALE).round() as u64).max(1));
        }
    }

    pub fn merge(&mut self, o: &ClassStats) {
        self.lat.add(&o.lat).expect("same bounds");
        self.slow.add(&o.slow).expect("same bounds");
        self.lat_sum_ns += o.lat_sum_ns;
        self.count += o.count;
        self.replies += o.replies;
        self.lost += o.lost;
        self.errors += o.errors;
        self.scheduled += o.scheduled;
        self.replies_in_window += o.replies_in_window;
    }
}

#[derive(Default, Clone, Copy)]
pub struct BadReplies {
    pub short: u64,
    pub bad_magic: u64,
    pub unknown_id: u64,
    pub duplicate: u64,
    /// op or class not echoed as sent
    pub mismatched: u64,
}

impl BadReplies {
    pub fn total(&self) -> u64 {
        self.short + self.bad_magic + self.unknown_id + self.duplicate + self.mismatched
    }
}

/// The receiver's state.
pub struct Rx {
    pub received: Vec<bool>,
    pub classes: Vec<ClassStats>,
    pub bad: BadReplies,
    pub status_counts: [u64; 256],
    /// distinct replies to known ids (any time)
    pub replies_total: u64,
    pub w0: u64,
    pub w1: u64,
}

impl Rx {
    pub fn new(n: usize, nclasses: usize, w0: u64, w1: u64) -> Rx {
        Rx {
            received: vec![false; n],
            classes: (0..nclasses).map(|_| ClassStats::new()).collect(),
            bad: BadReplies::default(),
            status_counts: [0; 256],
            replies_total: 0,
            w0,
            w1,
        }
    }

    /// One datagram received at `now_ns` (ns since the run's start).
    #[inline]
    pub fn on_datagram(&mut self, buf: &[u8], now_ns: u64, s: &Schedule) {
        let r: Resp = match proto::decode_resp(buf) {
            Ok(r) => r,
            Err(proto::DecodeError::Short) => {
                self.bad.short += 1;
                return;
            }
            Err(proto::DecodeError::BadMagic) => {
                self.bad.bad_magic += 1;
                return;
            }
        };
        let id = r.id as usize;
        if r.id >= s.len() as u64 {
            self.bad.unknown_id += 1;
            return;
        }
        let class = s.class[id];
        if r.klass != class || r.op != s.op_of(id) as u8 {
            self.bad.mismatched += 1;
            return;
        }
        if self.received[id] {
            self.bad.duplicate += 1;
            return;
        }
        self.received[id] = true;
        self.replies_total += 1;
        self.status_counts[r.status as usize] += 1;
        let cs = &mut self.classes[class as usize];
        if now_ns >= self.w0 && now_ns < self.w1 {
            cs.replies_in_window += 1;
        }
        let t = s.t[id];
        if t >= self.w0 && t < self.w1 {
            cs.replies += 1;
            if r.status != proto::STATUS_OK && r.status != proto::STATUS_NOT_FOUND {
                cs.errors += 1;
            }
            cs.record(now_ns.saturating_sub(t), s.service_ns(id));
        }
    }

    /// End of the run: every measured request without a reply is lost and recorded with
    /// latency = `deadline_ns` - intended send time. Returns the number of unsent measured ones.
    pub fn finish(&mut self, s: &Schedule, deadline_ns: u64, sent_upto: usize) -> u64 {
        let mut unsent = 0;
        for id in 0..s.len() {
            let t = s.t[id];
            if t < self.w0 || t >= self.w1 {
                continue;
            }
            let cs = &mut self.classes[s.class[id] as usize];
            cs.scheduled += 1;
            if !self.received[id] {
                cs.lost += 1;
                if id >= sent_upto {
                    unsent += 1;
                }
                cs.record(deadline_ns.saturating_sub(t), s.service_ns(id));
            }
        }
        unsent
    }
}

/// What the sender records.
pub struct Tx {
    pub lag: Histogram<u64>,
    /// requests handed to the kernel
    pub sent: u64,
    pub send_errors: u64,
    /// sends (of any request) whose actual send time fell in the measured window
    pub sent_in_window: u64,
}

impl Tx {
    pub fn new() -> Tx {
        Tx { lag: lat_hist(), sent: 0, send_errors: 0, sent_in_window: 0 }
    }

    #[inline]
    pub fn on_sent(&mut self, intended: u64, actual: u64, w0: u64, w1: u64) {
        self.sent += 1;
        if intended >= w0 && intended < w1 {
            self.lag.saturating_record(actual.saturating_sub(intended).max(1));
        }
        if actual >= w0 && actual < w1 {
            self.sent_in_window += 1;
        }
    }
}
