// go-synth: the Go peer of jiffy-synth. A UDP server speaking docs/protocol.md whose handlers
// run as one goroutine per request, so Go's scheduler (and its ~10 ms asynchronous preemption)
// decides who runs when short and long requests compete.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
)

type stats struct {
	requests atomic.Uint64 // datagrams with a readable header (each gets a reply attempt)
	replies  atomic.Uint64 // replies sent
	dropped  atomic.Uint64 // malformed datagrams dropped: short, bad magic, > 2048 bytes
	errors   atomic.Uint64 // socket errors (receive or send)
}

var st stats

func serveRequest(conn *net.UDPConn, hdr [headerLen]byte, n int, from netip.AddrPort) {
	req := decodeRequest(hdr[:])
	rep := handle(&req, n)
	var out [headerLen]byte
	rep.encode(out[:])
	if _, err := conn.WriteToUDPAddrPort(out[:], from); err != nil {
		st.errors.Add(1)
		return
	}
	st.replies.Add(1)
}

// reader receives datagrams, drops the malformed ones and starts one goroutine per request.
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
		st.requests.Add(1)
		var hdr [headerLen]byte // the synthetic server needs only the header
		copy(hdr[:], buf[:headerLen])
		go serveRequest(conn, hdr, n, from)
	}
}

func main() {
	port := flag.Int("port", 7000, "UDP port to listen on")
	threads := flag.Int("threads", 1, "GOMAXPROCS: kernel threads running goroutines")
	readers := flag.Int("readers", 1, "goroutines receiving on the socket")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go-synth [--port P] [--threads N] [--readers R]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "go-synth: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if *port < 0 || *port > 65535 || *threads < 1 || *readers < 1 {
		fmt.Fprintln(os.Stderr, "go-synth: --port must be 0..65535, --threads and --readers >= 1")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)

	rate := calibrate()
	fmt.Fprintf(os.Stderr, "go-synth: spin calibrated: %.1f iterations/us; GOMAXPROCS=%d readers=%d\n",
		rate*1000, runtime.GOMAXPROCS(0), *readers)

	conn, err := net.ListenUDP("udp", &net.UDPAddr{Port: *port})
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-synth: listen udp %d: %v\n", *port, err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	for i := 0; i < *readers; i++ {
		go reader(conn)
	}
	fmt.Printf("READY go-synth udp=%d\n", conn.LocalAddr().(*net.UDPAddr).Port)
	os.Stdout.Sync()

	<-sigs
	fmt.Fprintf(os.Stderr, "go-synth: requests=%d replies=%d dropped=%d errors=%d\n",
		st.requests.Load(), st.replies.Load(), st.dropped.Load(), st.errors.Load())
	os.Exit(0)
}
