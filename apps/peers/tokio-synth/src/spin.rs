//! The SPIN loop of docs/protocol.md (C: apps/common/spin.c): a dependent wrapping u64
//! multiply-add chain, calibrated at start-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const MUL: u64 = 6364136223846793005;
const ADD: u64 = 1442695040888963407;

/// Iterations per ns, as f64 bits; set once before the server starts.
static RATE: AtomicU64 = AtomicU64::new(0);
/// Consumes every loop result.
static SINK: AtomicU64 = AtomicU64::new(0);

/// `iters` steps of the chain from `seed | 1`. The empty asm (as in spin.c) makes the compiler
/// keep every step in a register: no vectorising, no closed form, no extra memory traffic.
#[inline(never)]
pub fn spin_iters(iters: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..iters {
        x = x.wrapping_mul(MUL).wrapping_add(ADD);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an empty asm block that only claims to read and write x.
        unsafe {
            std::arch::asm!("/* {0} */", inout(reg) x, options(nomem, nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            x = std::hint::black_box(x);
        }
    }
    x
}

pub fn set_rate(iters_per_ns: f64) {
    RATE.store(iters_per_ns.to_bits(), Ordering::Relaxed);
}

pub fn rate() -> f64 {
    f64::from_bits(RATE.load(Ordering::Relaxed))
}

/// 25 trials of 2,000,000 iterations on the monotonic clock; the fastest one (nothing
/// interrupted it) gives iterations per ns, which is stored and returned.
pub fn calibrate() -> f64 {
    const N: u64 = 2_000_000;
    let mut best = 0.0f64;
    for trial in 0..25u64 {
        let t0 = Instant::now();
        SINK.store(spin_iters(N, trial), Ordering::Relaxed);
        let dt = t0.elapsed().as_nanos().max(1) as f64;
        best = best.max(N as f64 / dt);
    }
    set_rate(best);
    best
}

/// round(ns * rate).
pub fn iters_at(ns: u64, rate: f64) -> u64 {
    (ns as f64 * rate + 0.5) as u64
}

/// round(ns * iterations per ns).
pub fn iters_for(ns: u64) -> u64 {
    iters_at(ns, rate())
}

/// Computes for `ns` of CPU (the seed is ns, as in spin.c).
pub fn spin_ns(ns: u64) {
    SINK.store(spin_iters(iters_for(ns), ns), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_the_specified_lcg() {
        assert_eq!(spin_iters(0, 6), 7);
        let x1 = 1u64.wrapping_mul(MUL).wrapping_add(ADD);
        assert_eq!(spin_iters(2, 0), x1.wrapping_mul(MUL).wrapping_add(ADD));
    }

    // Not a timing assertion: iteration counts are round(ns * rate) and scale with ns.
    #[test]
    fn iterations_scale_with_ns() {
        let r = calibrate();
        assert!(r > 0.0);
        assert_eq!(iters_at(0, r), 0);
        assert_eq!(iters_at(1000, 0.75), 750);
        assert_eq!(iters_at(3, 0.5), 2); // 1.5 rounds up
        let (a, b) = (iters_at(1_000_000, r), iters_at(10_000_000, r));
        assert!(
            a > 0 && b >= 9 * a && b <= 11 * a,
            "1 ms -> {a}, 10 ms -> {b}"
        );
    }
}
