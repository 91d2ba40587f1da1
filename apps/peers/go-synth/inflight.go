// --max-inflight, as jiffy-synth's (apps/synth/jiffy_synth.c): at most N handler goroutines run
// at once; a datagram that arrives while N are running is dropped (counted in dropped and in
// shed) rather than becoming one more goroutine, so a flood cannot grow them without bound.
package main

import (
	"fmt"
	"strconv"
	"sync/atomic"
)

// The --max-inflight range and default, as jiffy-synth's.
const (
	maxInflightDefault = 4096
	maxInflightMax     = 1_000_000
)

// inflight counts the spawned handlers running and admits a new one only while fewer than max
// are. Safe for several readers at once.
type inflight struct {
	running atomic.Int64
	max     int64
}

// tryStart takes a slot for one more handler; false when max are running (shed the datagram).
// Exact under concurrent readers: the count never goes past max, even for a moment.
func (g *inflight) tryStart() bool {
	for {
		n := g.running.Load()
		if n >= g.max {
			return false
		}
		if g.running.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// done gives back the slot of a handler that has finished (its reply sent or failed).
func (g *inflight) done() {
	g.running.Add(-1)
}

// parseMaxInflight is the --max-inflight value: an integer in [1, 1000000].
func parseMaxInflight(v string) (int64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < 1 || n > maxInflightMax {
		return 0, fmt.Errorf("expected an integer from 1 to %d", maxInflightMax)
	}
	return int64(n), nil
}
