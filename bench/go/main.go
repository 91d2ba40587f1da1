// bench/go/main.go - the microbenchmark ops run with goroutines, the Go runtime's M:N threads
// that Jiffy is compared with.
//
// Owns: the Go version of every op of bench/README.md and a copy of the harness of
// bench/bench_common.h (calibrate to ~100 ms a run, 20 ms with BENCH_QUICK=1; 5 runs; print the
// min and median ns per op as "go\t<op>\t<min_ns>\t<median_ns>"). The loops and their counting
// match jiffy_bench.c, pthread_bench.c and fiber_bench.cpp: change them together.
//
// Single-core ops run with GOMAXPROCS=1; wakeup_xworker with GOMAXPROCS=2. Go cannot pin a
// goroutine to a P or a P to a CPU, and its scheduler puts a goroutine woken by a channel
// operation into the waker's P (runnext), so wakeup_xworker is a cross-P wakeup only when the
// other P takes the goroutine first. ctx_switch and wakeup_xworker use unbuffered channels (Go's
// idiomatic handoff); mutex_pingpong and condvar_pingpong use sync.Mutex and sync.Cond.
//
// `go_bench sync [OP...]` runs the synchronization-primitive ops of sync.go instead.
//
// Only the standard library; builds with Go 1.19 (Debian 12's golang-go) and newer.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	runtimeName = "go"
	reps        = 5
	calibNs     = 10 * time.Millisecond
	targetNs    = 100 * time.Millisecond
	quickNs     = 20 * time.Millisecond // with BENCH_QUICK=1
	maxIters    = uint64(1) << 34
)

var opNames = []string{
	"yield", "spawn_join", "ctx_switch", "wakeup_xworker", "mutex_pingpong", "condvar_pingpong",
}

// sample: ops operations took elapsed.
type sample struct {
	elapsed time.Duration
	ops     uint64
}

type opFunc func(iters uint64) sample

// scale returns the iteration count that makes a run that took elapsed for iters last targetNs
// (quickNs with BENCH_QUICK=1).
func scale(iters uint64, elapsed time.Duration) uint64 {
	if elapsed <= 0 {
		elapsed = 1
	}
	target := targetNs
	if os.Getenv("BENCH_QUICK") == "1" {
		target = quickNs
	}
	scaled := float64(iters) * float64(target) / float64(elapsed)
	switch {
	case scaled < 1:
		return 1
	case scaled > float64(maxIters):
		return maxIters
	}
	return uint64(scaled)
}

// benchRun calibrates and times fn, then prints its line (see bench_common.h: bench_run).
func benchRun(op string, fn opFunc) {
	iters := uint64(16)
	var s sample
	for {
		s = fn(iters)
		if s.ops == 0 {
			fmt.Fprintf(os.Stderr, "go: %s: the op reported no operations\n", op)
			fmt.Printf("%s\t%s\tn/a\tn/a\n", runtimeName, op)
			return
		}
		if s.elapsed >= calibNs || iters >= maxIters {
			break
		}
		grow := uint64(100)
		if s.elapsed > 0 {
			grow = uint64(2*calibNs/s.elapsed) + 1
		}
		if grow > 100 {
			grow = 100
		}
		if grow < 2 {
			grow = 2
		}
		iters *= grow
	}
	// Scale to the target, then once more after a full-length warm-up run (see bench_common.h).
	iters = scale(iters, s.elapsed)
	s = fn(iters)
	iters = scale(iters, s.elapsed)
	perOp := make([]float64, reps)
	for r := 0; r < reps; r++ {
		s = fn(iters)
		if s.ops > 0 {
			perOp[r] = float64(s.elapsed.Nanoseconds()) / float64(s.ops)
		}
	}
	sort.Float64s(perOp)
	fmt.Printf("%s\t%s\t%.1f\t%.1f\n", runtimeName, op, perOp[0], perOp[reps/2])
}

// pair: state shared by goroutine A (the initiator, which times its loop) and goroutine B.
// turn: 0 = A's turn, 1 = B's turn.
type pair struct {
	iters   uint64
	start   sync.WaitGroup // the barrier both pass before A starts its clock
	done    sync.WaitGroup
	stop    int32
	bCount  uint64
	elapsed time.Duration
	turn    int32
	mu      sync.Mutex
	cond    *sync.Cond
}

func newPair(iters uint64) *pair {
	p := &pair{iters: iters}
	p.start.Add(2)
	p.done.Add(2)
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *pair) barrier() {
	p.start.Done()
	p.start.Wait()
}

// run starts a and b as goroutines and waits for both.
func (p *pair) run(a, b func(p *pair)) {
	go func() { a(p); p.done.Done() }()
	go func() { b(p); p.done.Done() }()
	p.done.Wait()
}

// ---- yield: A yields iters times while B yields until A is done; ops = all yield calls. ----

func opYield(iters uint64) sample {
	p := newPair(iters)
	p.run(func(p *pair) {
		p.barrier()
		t0 := time.Now()
		for i := uint64(0); i < p.iters; i++ {
			runtime.Gosched()
		}
		p.elapsed = time.Since(t0)
		atomic.StoreInt32(&p.stop, 1)
	}, func(p *pair) {
		n := uint64(0)
		p.barrier()
		for atomic.LoadInt32(&p.stop) == 0 {
			runtime.Gosched()
			n++
		}
		p.bCount = n
	})
	return sample{p.elapsed, iters + p.bCount}
}

// ---- spawn_join: start a goroutine that does nothing but signal its end, wait for it. ----

func opSpawnJoin(iters uint64) sample {
	done := make(chan struct{})
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		go func() { done <- struct{}{} }()
		<-done
	}
	return sample{time.Since(t0), iters}
}

// ---- unbuffered channel ping-pong: ctx_switch (GOMAXPROCS=1), wakeup_xworker (2) ----
// One iteration is a round trip: two one-way handoffs.

func chanPingPong(iters uint64) time.Duration {
	p := newPair(iters)
	ping := make(chan struct{})
	pong := make(chan struct{})
	p.run(func(p *pair) {
		p.barrier()
		t0 := time.Now()
		for i := uint64(0); i < p.iters; i++ {
			ping <- struct{}{}
			<-pong
		}
		p.elapsed = time.Since(t0)
	}, func(p *pair) {
		p.barrier()
		for i := uint64(0); i < p.iters; i++ {
			<-ping
			pong <- struct{}{}
		}
	})
	return p.elapsed
}

func opCtxSwitch(iters uint64) sample {
	return sample{chanPingPong(iters), 2 * iters}
}

func opWakeupXworker(iters uint64) sample {
	return sample{chanPingPong(iters), iters}
}

// ---- condvar_pingpong: wait until turn == me, set turn = other, signal. ----

func opCondvarPingpong(iters uint64) sample {
	p := newPair(iters)
	p.run(func(p *pair) {
		p.barrier()
		t0 := time.Now()
		p.mu.Lock()
		for i := uint64(0); i < p.iters; i++ {
			p.turn = 1
			p.cond.Signal()
			for p.turn != 0 {
				p.cond.Wait()
			}
		}
		p.mu.Unlock()
		p.elapsed = time.Since(t0)
	}, func(p *pair) {
		p.barrier()
		p.mu.Lock()
		for i := uint64(0); i < p.iters; i++ {
			for p.turn != 1 {
				p.cond.Wait()
			}
			p.turn = 0
			p.cond.Signal()
		}
		p.mu.Unlock()
	})
	return sample{p.elapsed, 2 * iters}
}

// ---- mutex_pingpong: see pthread_bench.c for the protocol. ----

func (p *pair) mutexAwait(me int32) {
	p.mu.Lock()
	for atomic.LoadInt32(&p.turn) != me {
		p.mu.Unlock()
		runtime.Gosched()
		p.mu.Lock()
	}
}

func (p *pair) mutexPass(me int32) {
	atomic.StoreInt32(&p.turn, 1-me)
	runtime.Gosched()
	p.mu.Unlock()
}

func opMutexPingpong(iters uint64) sample {
	p := newPair(iters)
	p.run(func(p *pair) {
		p.barrier()
		t0 := time.Now()
		for i := uint64(0); i < p.iters; i++ {
			p.mutexAwait(0)
			p.mutexPass(0)
		}
		p.mutexAwait(0)
		p.elapsed = time.Since(t0)
		p.mu.Unlock()
	}, func(p *pair) {
		p.barrier()
		for i := uint64(0); i < p.iters; i++ {
			p.mutexAwait(1)
			p.mutexPass(1)
		}
	})
	return sample{p.elapsed, 2 * iters}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sync" { // the synchronization set (sync.go)
		syncMain(os.Args[2:])
		return
	}
	ops := map[string]struct {
		fn    opFunc
		procs int
	}{
		"yield":            {opYield, 1},
		"spawn_join":       {opSpawnJoin, 1},
		"ctx_switch":       {opCtxSwitch, 1},
		"wakeup_xworker":   {opWakeupXworker, 2},
		"mutex_pingpong":   {opMutexPingpong, 1},
		"condvar_pingpong": {opCondvarPingpong, 1},
	}
	selected := map[string]bool{}
	for _, a := range os.Args[1:] {
		if _, ok := ops[a]; !ok {
			fmt.Fprintf(os.Stderr, "%s: unknown op '%s'; ops: %s\n", os.Args[0], a,
				strings.Join(opNames, " "))
			os.Exit(2)
		}
		selected[a] = true
	}
	for _, name := range opNames {
		if len(selected) > 0 && !selected[name] {
			continue
		}
		op := ops[name]
		if op.procs > runtime.NumCPU() {
			fmt.Fprintf(os.Stderr, "go: %s needs %d CPUs\n", name, op.procs)
			fmt.Printf("%s\t%s\tn/a\tn/a\n", runtimeName, name)
			continue
		}
		runtime.GOMAXPROCS(op.procs)
		benchRun(name, op.fn)
	}
}
