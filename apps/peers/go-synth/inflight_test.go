package main

import (
	"sync"
	"testing"
)

// --max-inflight takes 1..1000000 and nothing else.
func TestParseMaxInflight(t *testing.T) {
	for v, want := range map[string]int64{"1": 1, "4": 4, "4096": 4096, "1000000": 1_000_000} {
		if n, err := parseMaxInflight(v); err != nil || n != want {
			t.Errorf("--max-inflight %s: got %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"", "0", "-1", "1000001", "4k", " 4", "1e3", "18446744073709551616"} {
		if n, err := parseMaxInflight(v); err == nil {
			t.Errorf("--max-inflight %q accepted as %d", v, n)
		}
	}
}

// N slots, then a refusal until one is given back.
func TestInflightBound(t *testing.T) {
	g := inflight{max: 3}
	for i := 0; i < 3; i++ {
		if !g.tryStart() {
			t.Fatalf("slot %d of 3 refused", i+1)
		}
	}
	if g.tryStart() {
		t.Fatal("a 4th handler admitted with --max-inflight 3")
	}
	g.done()
	if !g.tryStart() {
		t.Fatal("no slot after a handler finished")
	}
	if g.tryStart() {
		t.Fatal("a 4th handler admitted after done+tryStart")
	}
}

// Several readers at once never get more than max slots between them.
func TestInflightConcurrent(t *testing.T) {
	const max, readers, tries = 5, 8, 1000
	g := inflight{max: max}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < tries; i++ {
				if g.tryStart() {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted != max || g.running.Load() != max {
		t.Fatalf("admitted %d, running %d; want %d", admitted, g.running.Load(), max)
	}
}
