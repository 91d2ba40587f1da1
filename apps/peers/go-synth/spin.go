// The SPIN loop of docs/protocol.md (C: apps/common/spin.c): a dependent wrapping u64
// multiply-add chain, calibrated at start-up.
package main

import (
	"sync/atomic"
	"time"
)

const (
	lcgMul = 6364136223846793005
	lcgAdd = 1442695040888963407
)

// spinSink consumes every loop result so the compiler cannot drop the loop (atomic: handlers
// run in parallel).
var spinSink atomic.Uint64

// itersPerNs is set once by calibrate, before the server starts.
var itersPerNs float64

// spinIters runs iters steps of the chain from seed|1 and returns its value. Each step depends
// on the previous one; the Go compiler neither vectorises nor folds it.
func spinIters(iters, seed uint64) uint64 {
	x := seed | 1
	for i := uint64(0); i < iters; i++ {
		x = x*lcgMul + lcgAdd
	}
	return x
}

// calibrate times 25 trials of 2,000,000 iterations on the monotonic clock and keeps the
// fastest (the one nothing interrupted). It sets itersPerNs and returns it.
func calibrate() float64 {
	const n = 2_000_000
	best := 0.0
	for trial := 0; trial < 25; trial++ {
		t0 := time.Now() // carries a monotonic reading; Since uses it
		spinSink.Store(spinIters(n, uint64(t0.UnixNano())))
		dt := time.Since(t0).Nanoseconds()
		if dt <= 0 {
			dt = 1
		}
		if r := float64(n) / float64(dt); r > best {
			best = r
		}
	}
	itersPerNs = best
	return best
}

// itersFor is round(ns * itersPerNs).
func itersFor(ns uint64) uint64 {
	return uint64(float64(ns)*itersPerNs + 0.5)
}

// spinNs computes for ns of CPU (the seed is ns, as in spin.c).
func spinNs(ns uint64) {
	spinSink.Store(spinIters(itersFor(ns), ns))
}
