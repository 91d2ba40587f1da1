//! load/src/run.rs - the two ways of running the schedule against the server:
//!   loop    one thread: send every request that is due (batched), then drain the replies that
//!           have arrived (non-blocking), repeat; busy-polls. For a load generator on one CPU.
//!   threads a sender thread (spins until each intended send time) and a receiver thread
//!           (busy-polls; blocks with a timeout when the process has a single CPU).
//! Both stop receiving at the drain deadline: max(end of schedule, last send) + --drain-ms, or
//! earlier once every sent request has its reply. Both print a progress line each second when
//! asked to.

use crate::net::{ns_since, Batch, Sock, BATCH};
use crate::sched::Schedule;
use crate::stats::{Rx, Tx};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub struct RunParams {
    pub w0: u64,
    pub w1: u64,
    pub duration_ns: u64,
    pub drain_ns: u64,
    pub progress: bool,
    /// the sender gives up (the rest is "unsent") this long after the end of the schedule
    pub give_up_ns: u64,
}

/// Stalls of the load generator's own CPU in loop mode: an iteration of the loop that did little
/// (sent at most LIGHT_SENDS requests and drained less than a batch) yet took more than 100 us
/// means the vCPU was taken away (or the process preempted) meanwhile. Counted only inside the
/// measured window. A stall of this CPU delays sends and the stamping of replies, so it is part
/// of the measured latency; reported so that a noisy run can be told from a slow server.
#[derive(Default, Clone, Copy)]
pub struct Stalls {
    pub over_100us: u64,
    pub over_1ms: u64,
    pub max_ns: u64,
    pub total_ns: u64,
}

const LIGHT_SENDS: usize = 4;

impl Stalls {
    #[inline]
    fn note(&mut self, gap: u64) {
        if gap > 100_000 {
            self.over_100us += 1;
            self.total_ns += gap;
            if gap > 1_000_000 {
                self.over_1ms += 1;
            }
            self.max_ns = self.max_ns.max(gap);
        }
    }
}

pub struct RunResult {
    /// loop mode only (threads mode: zeros)
    pub stalls: Stalls,
    pub tx: Tx,
    pub rx: Rx,
    pub deadline_ns: u64,
    pub sent_upto: usize,
    pub end_ns: u64,
    /// "loop" or "threads"
    pub mode: &'static str,
}

struct Progress {
    next: u64,
    last_sent: u64,
    last_recv: u64,
}

impl Progress {
    fn new() -> Progress {
        Progress { next: 1_000_000_000, last_sent: 0, last_recv: 0 }
    }
    fn tick(&mut self, now: u64, sent: u64, recv: u64, lag_max: u64) {
        if now < self.next {
            return;
        }
        let s = self.next / 1_000_000_000;
        eprintln!(
            "[{s:4}s] sent {sent} ({}/s) received {recv} ({}/s) max lag {:.1} us",
            sent - self.last_sent,
            recv - self.last_recv,
            lag_max as f64 / 1e3
        );
        self.last_sent = sent;
        self.last_recv = recv;
        self.next += 1_000_000_000;
    }
}

/// Fill the batch with the due requests starting at `i` (at most BATCH); return how many.
#[inline]
fn fill(s: &Schedule, b: &mut Batch, i: usize, now: u64) -> usize {
    let n = s.len();
    let mut k = 0;
    while k < BATCH && i + k < n && s.t[i + k] <= now {
        let len = s.encode(i + k, &mut b.bufs[k]);
        b.lens[k] = len;
        k += 1;
    }
    k
}

pub fn run_loop(sock: &Sock, s: &Schedule, p: &RunParams, start: Instant, nclasses: usize) -> RunResult {
    let fd = sock.fd();
    let n = s.len();
    let mut tx = Tx::new();
    let mut rx = Rx::new(n, nclasses, p.w0, p.w1);
    let mut sb = Batch::new();
    let mut rb = Batch::new();
    let mut i = 0usize;
    let mut deadline: Option<u64> = if n == 0 { Some(p.duration_ns + p.drain_ns) } else { None };
    let mut prog = Progress::new();
    let mut lag_max_sec = 0u64;
    let mut ok_sent = 0u64;
    let mut stalls = Stalls::default();
    let mut prev = 0u64;
    let mut prev_light = false;
    let end;
    loop {
        let now = ns_since(start);
        if prev_light && prev >= p.w0 && now <= p.w1 {
            stalls.note(now - prev);
        }
        prev = now;
        prev_light = true;
        if i < n && s.t[i] <= now {
            if now > p.duration_ns + p.give_up_ns {
                // hopelessly behind: stop sending; the rest is unsent (and lost)
                deadline = Some(now + p.drain_ns);
                i = n;
            } else {
                let k = fill(s, &mut sb, i, now);
                prev_light = k <= LIGHT_SENDS;
                let (done, errs) = sb.send(fd, k);
                tx.send_errors += errs + (k - done) as u64;
                for j in 0..k {
                    let it = s.t[i + j];
                    tx.on_sent(it, now, p.w0, p.w1);
                    lag_max_sec = lag_max_sec.max(now - it);
                }
                ok_sent += done as u64;
                i += k;
                if i == n {
                    deadline = Some(now.max(p.duration_ns) + p.drain_ns);
                }
            }
        }
        // drain what has arrived
        loop {
            let got = rb.recv(fd, false);
            if got == 0 {
                break;
            }
            let t = ns_since(start);
            for k in 0..got {
                rx.on_datagram(&rb.bufs[k][..rb.lens[k]], t, s);
            }
            if got < BATCH {
                break;
            }
            prev_light = false;
        }
        if let Some(d) = deadline {
            if now >= d || rx.replies_total >= ok_sent {
                end = now;
                break;
            }
        }
        if p.progress && now >= prog.next {
            prog.tick(now, tx.sent, rx.replies_total, lag_max_sec);
            lag_max_sec = 0;
        }
    }
    let sent_upto = tx.sent as usize;
    let deadline_ns = deadline.unwrap_or(end);
    RunResult { stalls, tx, rx, deadline_ns, sent_upto, end_ns: end, mode: "loop" }
}

struct Shared {
    sent_upto: AtomicUsize,
    ok_sent: AtomicU64,
    lag_max: AtomicU64,
    done: AtomicBool,
    deadline: AtomicU64,
}

pub fn run_threads(
    sock: &Sock,
    s: Arc<Schedule>,
    p: &RunParams,
    start: Instant,
    nclasses: usize,
    single_cpu: bool,
) -> RunResult {
    let fd = sock.fd();
    let n = s.len();
    let sh = Arc::new(Shared {
        sent_upto: AtomicUsize::new(0),
        ok_sent: AtomicU64::new(0),
        lag_max: AtomicU64::new(0),
        done: AtomicBool::new(false),
        deadline: AtomicU64::new(u64::MAX),
    });
    if single_cpu {
        crate::net::set_rcvtimeo(fd, 2000);
    }
    let (w0, w1, dur, drain, give_up) = (p.w0, p.w1, p.duration_ns, p.drain_ns, p.give_up_ns);
    let sender = {
        let s = Arc::clone(&s);
        let sh = Arc::clone(&sh);
        std::thread::Builder::new()
            .name("jl-sender".into())
            .spawn(move || {
                let mut tx = Tx::new();
                let mut sb = Batch::new();
                let mut i = 0usize;
                while i < n {
                    let mut now = ns_since(start);
                    while s.t[i] > now {
                        if single_cpu {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                        now = ns_since(start);
                    }
                    if now > dur + give_up {
                        break;
                    }
                    let k = fill(&s, &mut sb, i, now);
                    let (done, errs) = sb.send(fd, k);
                    tx.send_errors += errs + (k - done) as u64;
                    let mut lm = 0;
                    for j in 0..k {
                        tx.on_sent(s.t[i + j], now, w0, w1);
                        lm = lm.max(now - s.t[i + j]);
                    }
                    i += k;
                    sh.ok_sent.fetch_add(done as u64, Ordering::Release);
                    sh.sent_upto.store(i, Ordering::Release);
                    sh.lag_max.fetch_max(lm, Ordering::Relaxed);
                }
                let now = ns_since(start);
                sh.deadline.store(now.max(dur) + drain, Ordering::Release);
                sh.done.store(true, Ordering::Release);
                tx
            })
            .expect("spawn the sender thread")
    };
    let mut rx = Rx::new(n, nclasses, w0, w1);
    let mut rb = Batch::new();
    let mut prog = Progress::new();
    let end;
    loop {
        let got = rb.recv(fd, single_cpu);
        let now = ns_since(start);
        for k in 0..got {
            rx.on_datagram(&rb.bufs[k][..rb.lens[k]], now, &s);
        }
        if sh.done.load(Ordering::Acquire) {
            let d = sh.deadline.load(Ordering::Acquire);
            if now >= d || rx.replies_total >= sh.ok_sent.load(Ordering::Acquire) {
                end = now;
                break;
            }
        }
        if p.progress && now >= prog.next {
            let sent = sh.sent_upto.load(Ordering::Relaxed) as u64;
            prog.tick(now, sent, rx.replies_total, sh.lag_max.swap(0, Ordering::Relaxed));
        }
    }
    let tx = sender.join().expect("the sender thread panicked");
    let sent_upto = sh.sent_upto.load(Ordering::Acquire);
    let deadline_ns = sh.deadline.load(Ordering::Acquire);
    RunResult { stalls: Stalls::default(), tx, rx, deadline_ns, sent_upto, end_ns: end, mode: "threads" }
}
