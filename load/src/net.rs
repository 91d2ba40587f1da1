//! load/src/net.rs - the operating-system side of jiffy-load: one connected UDP socket with large
//! buffers, batched sends and non-blocking batched receives (sendmmsg/recvmmsg), CPU pinning
//! (sched_setaffinity) and the monotonic clock.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

pub const BATCH: usize = 32;

/// Nanoseconds since `start` (CLOCK_MONOTONIC through std::time::Instant).
#[inline]
pub fn ns_since(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

pub struct Sock {
    pub sock: UdpSocket,
    pub rcvbuf: usize,
    pub sndbuf: usize,
}

fn setbuf(fd: i32, force: i32, plain: i32, bytes: usize) -> usize {
    let v = bytes as libc::c_int;
    let sz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt/getsockopt with a valid fd and int-sized option buffers.
    unsafe {
        if libc::setsockopt(fd, libc::SOL_SOCKET, force, &v as *const _ as *const libc::c_void, sz) != 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, plain, &v as *const _ as *const libc::c_void, sz);
        }
        let mut got: libc::c_int = 0;
        let mut gl = sz;
        libc::getsockopt(fd, libc::SOL_SOCKET, plain, &mut got as *mut _ as *mut libc::c_void, &mut gl);
        got as usize
    }
}

pub fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("--server '{addr}': {e}"))?
        .next()
        .ok_or_else(|| format!("--server '{addr}': no address"))
}

impl Sock {
    pub fn connect(addr: SocketAddr, bufsize: usize) -> Result<Sock, String> {
        let local = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let sock = UdpSocket::bind(local).map_err(|e| format!("bind: {e}"))?;
        sock.connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let fd = sock.as_raw_fd();
        // SO_*BUFFORCE works for root (ignores net.core.*mem_max); else the capped plain call.
        let rcvbuf = setbuf(fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, bufsize);
        let sndbuf = setbuf(fd, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, bufsize);
        Ok(Sock { sock, rcvbuf, sndbuf })
    }

    pub fn fd(&self) -> i32 {
        self.sock.as_raw_fd()
    }
}

/// Buffers for one batch of datagrams.
pub struct Batch {
    pub bufs: Vec<Vec<u8>>,
    pub lens: [usize; BATCH],
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers inside point into `bufs`, owned by the same struct.
unsafe impl Send for Batch {}

impl Batch {
    pub fn new() -> Batch {
        let bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; crate::proto::MAX_DGRAM + 64]).collect();
        // SAFETY: all-zero mmsghdr/iovec are valid "empty" values.
        let iov = vec![unsafe { std::mem::zeroed::<libc::iovec>() }; BATCH];
        let hdrs = vec![unsafe { std::mem::zeroed::<libc::mmsghdr>() }; BATCH];
        Batch { bufs, lens: [0; BATCH], iov, hdrs }
    }

    fn prepare(&mut self, n: usize, full: bool) {
        for k in 0..n {
            let len = if full { self.bufs[k].len() } else { self.lens[k] };
            self.iov[k].iov_base = self.bufs[k].as_mut_ptr() as *mut libc::c_void;
            self.iov[k].iov_len = len;
            let h = &mut self.hdrs[k];
            h.msg_hdr.msg_name = std::ptr::null_mut();
            h.msg_hdr.msg_namelen = 0;
            h.msg_hdr.msg_iov = &mut self.iov[k];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = std::ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
    }

    /// Send datagrams 0..n. Returns (number sent, errors). A datagram the kernel refuses
    /// (e.g. ECONNREFUSED left by an ICMP error) is skipped and counted.
    pub fn send(&mut self, fd: i32, n: usize) -> (usize, u64) {
        self.prepare(n, false);
        let mut done = 0usize;
        let mut errs = 0u64;
        while done < n {
            // SAFETY: hdrs[done..n] point at live buffers prepared above.
            let r = unsafe { libc::sendmmsg(fd, self.hdrs.as_mut_ptr().add(done), (n - done) as u32, 0) };
            if r > 0 {
                done += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {
                    // retry the same datagram, but do not spin forever on ENOBUFS
                    errs += 1;
                    if errs > 1000 {
                        return (done, errs);
                    }
                }
                Some(libc::ECONNREFUSED) => {
                    // error from an earlier datagram; retry (it is cleared by this report)
                    errs += 1;
                    if errs > 1000 {
                        return (done, errs);
                    }
                }
                _ => {
                    // skip this datagram
                    errs += 1;
                    return (done, errs);
                }
            }
        }
        (done, errs)
    }

    /// Receive up to BATCH datagrams without blocking (or blocking for the first one when
    /// `block`). Returns the number received; lens[k] is each one's length.
    pub fn recv(&mut self, fd: i32, block: bool) -> usize {
        self.prepare(BATCH, true);
        let flags = if block { libc::MSG_WAITFORONE } else { libc::MSG_DONTWAIT };
        // SAFETY: hdrs point at BATCH live buffers.
        let r = unsafe {
            libc::recvmmsg(fd, self.hdrs.as_mut_ptr(), BATCH as u32, flags, std::ptr::null_mut())
        };
        if r <= 0 {
            return 0;
        }
        for k in 0..r as usize {
            self.lens[k] = self.hdrs[k].msg_len as usize;
        }
        r as usize
    }
}

/// Set a receive timeout (for blocking receives).
pub fn set_rcvtimeo(fd: i32, us: i64) {
    let tv = libc::timeval { tv_sec: (us / 1_000_000) as libc::time_t, tv_usec: (us % 1_000_000) as libc::suseconds_t };
    // SAFETY: valid fd and timeval.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
}

/// Pin the calling thread (and the threads it later creates) to `cpus`.
pub fn pin(cpus: &[usize]) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET indices are < 1024 (checked by the parser).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("--cpu {cpus:?}: sched_setaffinity: {}", io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// CPUs this thread may run on.
pub fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// CPU time (user + system) this process has used, in seconds.
pub fn cpu_time_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
}
