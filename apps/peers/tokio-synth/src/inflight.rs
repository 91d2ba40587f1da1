//! --max-inflight, as jiffy-synth's (apps/synth/jiffy_synth.c): at most N spawned handler tasks
//! run at once; a datagram that arrives while N are running is dropped (counted in dropped and
//! in shed) rather than becoming one more task, so a flood cannot grow them without bound.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The --max-inflight range and default, as jiffy-synth's.
pub const DEFAULT: u64 = 4096;
pub const MAX: u64 = 1_000_000;

/// Counts the spawned handlers running; admits a new one only while fewer than `max` are.
pub struct Inflight {
    running: AtomicU64,
    max: u64,
}

/// A handler's slot: given back when dropped, i.e. when the handler's task finishes (its reply
/// sent or failed), or if the task is dropped unfinished.
pub struct Slot(Arc<Inflight>);

impl Inflight {
    pub fn new(max: u64) -> Arc<Self> {
        Arc::new(Inflight {
            running: AtomicU64::new(0),
            max,
        })
    }

    /// A slot for one more handler, or None when `max` are running (shed the datagram). The
    /// count never goes past `max`, even for a moment, whoever calls it.
    pub fn try_start(self: &Arc<Self>) -> Option<Slot> {
        self.running
            .fetch_update(Relaxed, Relaxed, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| Slot(self.clone()))
    }

    #[cfg(test)]
    fn running(&self) -> u64 {
        self.running.load(Relaxed)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Relaxed);
    }
}

/// The --max-inflight value: an integer in [1, 1000000]; the error names the flag and the value.
pub fn parse(v: &str) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (1..=MAX).contains(&n) => Ok(n),
        _ => Err(format!(
            "--max-inflight: expected an integer from 1 to {MAX}, got '{v}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_values() {
        for (v, n) in [("1", 1), ("4", 4), ("4096", 4096), ("1000000", 1_000_000)] {
            assert_eq!(parse(v), Ok(n), "--max-inflight {v}");
        }
        for v in [
            "",
            "0",
            "-1",
            "1000001",
            "4k",
            " 4",
            "1e3",
            "18446744073709551616",
        ] {
            let e = parse(v).expect_err(v);
            assert!(
                e.contains("--max-inflight") && e.contains(&format!("'{v}'")),
                "{e}"
            );
        }
    }

    #[test]
    fn bound_and_release() {
        let g = Inflight::new(3);
        let mut slots: Vec<Slot> = (0..3)
            .map(|i| g.try_start().unwrap_or_else(|| panic!("slot {i}")))
            .collect();
        assert!(
            g.try_start().is_none(),
            "a 4th handler admitted with --max-inflight 3"
        );
        assert_eq!(g.running(), 3);
        drop(slots.pop());
        assert_eq!(g.running(), 2);
        let again = g.try_start();
        assert!(again.is_some(), "no slot after a handler finished");
        assert!(g.try_start().is_none());
        drop(again);
        assert_eq!(g.running(), 2);
    }

    #[test]
    fn concurrent_callers_never_exceed_max() {
        let g = Inflight::new(5);
        let held: Vec<Vec<Slot>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..1000).filter_map(|_| g.try_start()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(held.iter().map(Vec::len).sum::<usize>(), 5);
        assert_eq!(g.running(), 5);
        drop(held);
        assert_eq!(g.running(), 0);
    }
}
