// go-synth: the Go peer of jiffy-synth. A UDP server speaking docs/protocol.md whose handlers
// run as one goroutine per request, so Go's scheduler (and its ~10 ms asynchronous preemption)
// decides who runs when short and long requests compete.
//
// Safe by default, as the C servers (docs/security.md): it listens on 127.0.0.1 unless --bind
// says otherwise, refuses a non-loopback address unless --protected-mode no (listen.go), and a
// SPIN over --max-spin-us (1 ms by default) gets TOO_LARGE with the cap as its result; at most
// --max-inflight (4096) handler goroutines run at once, and datagrams past that are dropped
// (counted), so a flood cannot become an unbounded number of goroutines (inflight.go).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
)

type stats struct {
	requests atomic.Uint64 // datagrams with a readable header (each gets a reply attempt)
	replies  atomic.Uint64 // replies sent
	dropped  atomic.Uint64 // datagrams dropped: short, bad magic, > 2048 bytes, or shed
	errors   atomic.Uint64 // socket errors (receive or send)
	shed     atomic.Uint64 // of dropped: arrived while --max-inflight handlers were running
}

var st stats

// What a non-loopback --bind would expose (listenConfig.check).
const openFrontEnd = "the UDP request protocol (SPIN: any CPU time up to --max-spin-us per datagram)"

// The --max-spin-us range and default, as apps/common/synth.h.
const (
	spinCapDefaultUs = 1000
	spinCapMaxUs     = 10_000_000
)

// maxSpinNs is the SPIN cap (--max-spin-us), set once before the server starts.
var maxSpinNs uint64 = spinCapDefaultUs * 1000

// handlers bounds the handler goroutines running (--max-inflight), set before the server starts.
var handlers = inflight{max: maxInflightDefault}

// serveRequest runs on its own goroutine, holding a --max-inflight slot until its reply is
// sent or has failed.
func serveRequest(conn *net.UDPConn, hdr [headerLen]byte, n int, from netip.AddrPort) {
	defer handlers.done()
	req := decodeRequest(hdr[:])
	rep := handle(&req, n, maxSpinNs)
	var out [headerLen]byte
	rep.encode(out[:])
	if _, err := conn.WriteToUDPAddrPort(out[:], from); err != nil {
		st.errors.Add(1)
		return
	}
	st.replies.Add(1)
}

// reader receives datagrams, drops the malformed ones and starts one goroutine per request,
// unless --max-inflight handlers are running: then the datagram is dropped (shed), as a full
// socket buffer would drop it.
func reader(conn *net.UDPConn) {
	buf := make([]byte, maxDgram+1) // a datagram that fills it is over the limit
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			st.errors.Add(1)
			continue
		}
		if n < headerLen || n > maxDgram || uint16(buf[0])|uint16(buf[1])<<8 != protoMagic {
			st.dropped.Add(1)
			continue
		}
		if !handlers.tryStart() {
			st.shed.Add(1)
			st.dropped.Add(1)
			continue
		}
		st.requests.Add(1)
		var hdr [headerLen]byte // the synthetic server needs only the header
		copy(hdr[:], buf[:headerLen])
		go serveRequest(conn, hdr, n, from)
	}
}

func main() {
	var port, threads, readers uint64 = 7000, 1, 1
	flag.Func("port", "`P`: the UDP port to listen on, 0..65535 (default 7000; 0 picks a free one)",
		func(v string) error {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > 65535 {
				return fmt.Errorf("expected a port number from 0 to 65535")
			}
			port = n
			return nil
		})
	uintFlag(&threads, "threads", 1, 1024, "`N`: GOMAXPROCS, the kernel threads running goroutines (default 1)")
	uintFlag(&readers, "readers", 1, 1024, "`R`: goroutines receiving on the socket (default 1)")
	lc := defaultListen()
	flag.Func("bind", "`ADDR`: the numeric IPv4 or IPv6 address to listen on (default 127.0.0.1:\n"+
		"loopback only; 0.0.0.0 or :: for every interface). The UDP protocol has no\n"+
		"authentication: an address outside 127.0.0.0/8 and ::1 needs --protected-mode no",
		lc.setBind)
	flag.Func("protected-mode", "`yes|no`: yes (default) refuses to start on a non-loopback address;\n"+
		"no starts anyway, with a warning (docs/security.md)", lc.setProtected)
	maxSpinUs := uint64(spinCapDefaultUs)
	uintFlag(&maxSpinUs, "max-spin-us", 1, spinCapMaxUs,
		"`US`: the longest SPIN a datagram may ask for, in microseconds\n"+
			"(default 1000, max 10000000); longer ones get TOO_LARGE (docs/security.md)")
	flag.Func("max-inflight", "`N`: handler goroutines running at once (default 4096, max 1000000);\n"+
		"datagrams past it are dropped, counted in dropped (docs/security.md)", func(v string) error {
		n, err := parseMaxInflight(v)
		if err != nil {
			return err
		}
		handlers.max = n
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go-synth [--port P] [--bind ADDR] "+
			"[--protected-mode yes|no] [--max-spin-us US]\n"+
			"                [--max-inflight N] [--threads N] [--readers R] [--version]\n")
		flag.PrintDefaults()
	}
	parseCommandLine()
	if err := lc.check(os.Stderr, "go-synth", openFrontEnd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	maxSpinNs = maxSpinUs * 1000
	runtime.GOMAXPROCS(int(threads))

	rate := calibrate()
	fmt.Fprintf(os.Stderr, "go-synth: spin calibrated: %.1f iterations/us; GOMAXPROCS=%d readers=%d\n",
		rate*1000, runtime.GOMAXPROCS(0), readers)

	network, laddr := lc.udpAddr(int(port))
	conn, err := net.ListenUDP(network, laddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-synth: cannot listen on %s UDP port %d (--bind, --port): %v\n",
			lc.text, port, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "go-synth: listening on %s udp=%d; SPIN capped at %d us (--max-spin-us)\n",
		lc.text, conn.LocalAddr().(*net.UDPAddr).Port, maxSpinUs)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	for i := uint64(0); i < readers; i++ {
		go reader(conn)
	}
	fmt.Printf("READY go-synth udp=%d\n", conn.LocalAddr().(*net.UDPAddr).Port)
	os.Stdout.Sync()

	<-sigs
	if shed := st.shed.Load(); shed > 0 {
		fmt.Fprintf(os.Stderr, "go-synth: shed %d datagrams: --max-inflight %d handlers were running "+
			"(counted in dropped)\n", shed, handlers.max)
	}
	fmt.Fprintf(os.Stderr, "go-synth: requests=%d replies=%d dropped=%d errors=%d\n",
		st.requests.Load(), st.replies.Load(), st.dropped.Load(), st.errors.Load())
	os.Exit(0)
}
