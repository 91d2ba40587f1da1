// bench/go/sync.go - the synchronization-primitive benchmarks run with goroutines
// (`go_bench sync [OP...]`).
//
// Owns: the Go version of every op of bench/sync_common.h and its harness (main.go's calibration,
// then 5 timed runs, printing "go\t<op>\t<min_ns>\t<median_ns>\t<max_ns>"). Primitives: sync.Mutex,
// sync.RWMutex, sync.Once, sync.WaitGroup, channels; the semaphore is a buffered channel of tokens
// (wait = receive a token, post = send one), Go's idiomatic counting semaphore
// (golang.org/x/sync/semaphore is not used: bench/go stays standard library only).
// n/a: barrier_round (Go has no barrier in its standard library).
//
// Uncontended ops and ping-pongs run with GOMAXPROCS=1, the contended ops with GOMAXPROCS=2 and
// BENCH_SYNC_THREADS goroutines (Go cannot pin a goroutine to a P or a P to a CPU).
// The loops and their counting match jiffy_sync_bench.c, pthread_sync_bench.c and
// fiber_sync_bench.cpp: change them together.
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
	syncThreads = 4  // BENCH_SYNC_THREADS
	syncWorkers = 2  // BENCH_SYNC_WORKERS
	syncChanCap = 64 // BENCH_SYNC_CHAN_CAP
	capFactor   = 3  // BENCH_SYNC_CAP_FACTOR: capped ops stop after 3 x the target run time
	checkEvery  = 64 // BENCH_SYNC_CHECK_EVERY
)

var syncOpNames = []string{
	"mutex_uncontended", "mutex_contended", "rwlock_rd_uncontended", "rwlock_read90",
	"rwlock_write90", "sem_uncontended", "sem_pingpong", "barrier_round", "once_fast",
	"waitgroup_round", "chan_buffered", "chan_unbuffered_pingpong", "chan_mpmc",
}

// benchSyncRun calibrates and times fn like benchRun, then prints min, median and max.
func benchSyncRun(op string, fn opFunc) {
	iters := uint64(16)
	var s sample
	for {
		s = fn(iters)
		if s.ops == 0 {
			fmt.Fprintf(os.Stderr, "go: %s: the op reported no operations\n", op)
			fmt.Printf("%s\t%s\tn/a\tn/a\tn/a\n", runtimeName, op)
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
	fmt.Printf("%s\t%s\t%.1f\t%.1f\t%.1f\n", runtimeName, op, perOp[0], perOp[reps/2], perOp[reps-1])
}

// group: state shared by the goroutines of one run (see jiffy_sync_bench.c's struct group).
type group struct {
	per     uint64
	n       int
	start   sync.WaitGroup
	done    sync.WaitGroup
	left    int32
	started int32
	t0, t1  time.Time
	stopAt  time.Time // capped ops stop then (bench/sync_common.h)
	ops     uint64    // capped ops: the operations done
	counter uint64
	sum     uint64
	mu      sync.Mutex
	rw      sync.RWMutex
	semA    chan struct{}
	semB    chan struct{}
	ping    chan uint64
	pong    chan uint64
}

func newGroup(n int, per uint64) *group {
	target := targetNs
	if os.Getenv("BENCH_QUICK") == "1" {
		target = quickNs
	}
	g := &group{per: per, n: n, left: int32(n), stopAt: time.Now().Add(capFactor * target)}
	g.start.Add(n)
	g.done.Add(n)
	return g
}

func (g *group) begin() {
	g.start.Done()
	g.start.Wait()
	if atomic.AddInt32(&g.started, 1) == 1 {
		g.t0 = time.Now()
	}
}

// expired: whether a capped op's goroutine should stop before iteration i.
func (g *group) expired(i uint64) bool {
	return i%checkEvery == 0 && time.Now().After(g.stopAt)
}

func (g *group) end() {
	if atomic.AddInt32(&g.left, -1) == 0 {
		g.t1 = time.Now()
	}
}

// run starts fn(g, i) for i < g.n as goroutines and waits for them; returns the timed span.
func (g *group) run(fn func(g *group, idx int)) time.Duration {
	for i := 0; i < g.n; i++ {
		go func(i int) { fn(g, i); g.done.Done() }(i)
	}
	g.done.Wait()
	return g.t1.Sub(g.t0)
}

func perThread(iters uint64, threads int) uint64 {
	per := (iters + uint64(threads) - 1) / uint64(threads)
	if per == 0 {
		per = 1
	}
	return per
}

func syncDie(msg string) {
	fmt.Fprintf(os.Stderr, "go_bench sync: %s\n", msg)
	os.Exit(1)
}

// ---- mutex ----

func opMutexUncontended(iters uint64) sample {
	var m sync.Mutex
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		m.Lock()
		m.Unlock()
	}
	return sample{time.Since(t0), iters}
}

func opMutexContended(iters uint64) sample {
	g := newGroup(syncThreads, perThread(iters, syncThreads))
	d := g.run(func(g *group, idx int) {
		g.begin()
		i := uint64(0)
		for ; i < g.per && !g.expired(i); i++ {
			g.mu.Lock()
			g.counter++
			g.mu.Unlock()
		}
		atomic.AddUint64(&g.ops, i)
		g.end()
	})
	if g.counter != g.ops {
		syncDie("mutex_contended: lost updates")
	}
	return sample{d, g.counter}
}

// ---- rwlock ----

var rwSink uint64

func opRwlockRdUncontended(iters uint64) sample {
	var rw sync.RWMutex
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		rw.RLock()
		rw.RUnlock()
	}
	return sample{time.Since(t0), iters}
}

func rwContended(iters uint64, writesPer10 uint64) sample {
	g := newGroup(syncThreads, perThread(iters, syncThreads))
	d := g.run(func(g *group, idx int) {
		sink := uint64(0)
		g.begin()
		i := uint64(0)
		for ; i < g.per && !g.expired(i); i++ {
			if (i+uint64(idx))%10 < writesPer10 {
				g.rw.Lock()
				g.counter++
				g.rw.Unlock()
			} else {
				g.rw.RLock()
				sink += g.counter
				g.rw.RUnlock()
			}
		}
		atomic.AddUint64(&g.ops, i)
		g.end()
		atomic.AddUint64(&rwSink, sink)
	})
	return sample{d, g.ops}
}

func opRwlockRead90(iters uint64) sample  { return rwContended(iters, 1) }
func opRwlockWrite90(iters uint64) sample { return rwContended(iters, 9) }

// ---- semaphore: a buffered channel of tokens ----

func opSemUncontended(iters uint64) sample {
	sem := make(chan struct{}, 1)
	sem <- struct{}{}
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		<-sem
		sem <- struct{}{}
	}
	return sample{time.Since(t0), iters}
}

func opSemPingpong(iters uint64) sample {
	g := newGroup(2, iters)
	g.semA = make(chan struct{}, 1)
	g.semB = make(chan struct{}, 1)
	d := g.run(func(g *group, idx int) {
		g.begin()
		for i := uint64(0); i < g.per; i++ {
			if idx == 0 {
				g.semB <- struct{}{}
				<-g.semA
			} else {
				<-g.semB
				g.semA <- struct{}{}
			}
		}
		g.end()
	})
	return sample{d, 2 * iters}
}

// ---- once ----

func opOnceFast(iters uint64) sample {
	var o sync.Once
	runs := 0
	fn := func() { runs++ }
	o.Do(fn)
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		o.Do(fn)
	}
	d := time.Since(t0)
	if runs != 1 {
		syncDie("once_fast: the function ran more than once")
	}
	return sample{d, iters}
}

// ---- waitgroup ----

func opWaitgroupRound(iters uint64) sample {
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		wg.Add(1)
		wg.Done()
		wg.Wait()
	}
	return sample{time.Since(t0), iters}
}

// ---- channels ----

func opChanBuffered(iters uint64) sample {
	c := make(chan uint64, syncChanCap)
	t0 := time.Now()
	for i := uint64(0); i < iters; i++ {
		c <- i
		<-c
	}
	return sample{time.Since(t0), iters}
}

func opChanUnbufferedPingpong(iters uint64) sample {
	g := newGroup(2, iters)
	g.ping = make(chan uint64)
	g.pong = make(chan uint64)
	d := g.run(func(g *group, idx int) {
		v := uint64(0)
		g.begin()
		for i := uint64(0); i < g.per; i++ {
			if idx == 0 {
				g.ping <- v
				v = <-g.pong
			} else {
				v = <-g.ping
				g.pong <- v + 1
			}
		}
		g.end()
		if idx == 0 && v != g.per {
			syncDie("chan_unbuffered_pingpong: wrong value")
		}
	})
	return sample{d, 2 * iters}
}

func opChanMpmc(iters uint64) sample {
	g := newGroup(4, perThread(iters, 2))
	g.ping = make(chan uint64, syncChanCap)
	d := g.run(func(g *group, idx int) {
		sum := uint64(0)
		g.begin()
		for i := uint64(0); i < g.per; i++ {
			if idx < 2 {
				g.ping <- i + 1
			} else {
				sum += <-g.ping
			}
		}
		g.end()
		atomic.AddUint64(&g.sum, sum)
	})
	if g.sum != g.per*(g.per+1) {
		syncDie("chan_mpmc: lost or duplicated items")
	}
	return sample{d, 2 * g.per}
}

// syncMain runs the sync ops named in args (all when none).
func syncMain(args []string) {
	ops := map[string]struct {
		fn    opFunc
		procs int
		na    string
	}{
		"mutex_uncontended":        {opMutexUncontended, 1, ""},
		"mutex_contended":          {opMutexContended, syncWorkers, ""},
		"rwlock_rd_uncontended":    {opRwlockRdUncontended, 1, ""},
		"rwlock_read90":            {opRwlockRead90, syncWorkers, ""},
		"rwlock_write90":           {opRwlockWrite90, syncWorkers, ""},
		"sem_uncontended":          {opSemUncontended, 1, ""},
		"sem_pingpong":             {opSemPingpong, 1, ""},
		"barrier_round":            {nil, syncWorkers, "Go has no barrier in its standard library"},
		"once_fast":                {opOnceFast, 1, ""},
		"waitgroup_round":          {opWaitgroupRound, 1, ""},
		"chan_buffered":            {opChanBuffered, 1, ""},
		"chan_unbuffered_pingpong": {opChanUnbufferedPingpong, 1, ""},
		"chan_mpmc":                {opChanMpmc, syncWorkers, ""},
	}
	selected := map[string]bool{}
	for _, a := range args {
		if _, ok := ops[a]; !ok {
			fmt.Fprintf(os.Stderr, "%s sync: unknown op '%s'; ops: %s\n", os.Args[0], a,
				strings.Join(syncOpNames, " "))
			os.Exit(2)
		}
		selected[a] = true
	}
	for _, name := range syncOpNames {
		if len(selected) > 0 && !selected[name] {
			continue
		}
		op := ops[name]
		switch {
		case op.fn == nil:
			fmt.Fprintf(os.Stderr, "go: %s: n/a: %s\n", name, op.na)
			fmt.Printf("%s\t%s\tn/a\tn/a\tn/a\n", runtimeName, name)
		case op.procs > runtime.NumCPU():
			fmt.Fprintf(os.Stderr, "go: %s: n/a: needs %d CPUs\n", name, op.procs)
			fmt.Printf("%s\t%s\tn/a\tn/a\tn/a\n", runtimeName, name)
		default:
			runtime.GOMAXPROCS(op.procs)
			benchSyncRun(name, op.fn)
		}
	}
}
