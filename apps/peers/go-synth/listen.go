// Where go-synth listens, and whether it may (docs/security.md): the Go side of
// apps/common/listen.c, with the same flags, default and rule, and the same words.
//
// --bind ADDR takes a numeric IPv4 or IPv6 address ("::1", "[::1]", "fe80::1%eth0"); host names
// are refused, so where the server listens never depends on DNS. The default is 127.0.0.1. On a
// non-loopback address (anything outside 127.0.0.0/8, ::1 and ::ffff:127.x.y.z; 0.0.0.0 and ::
// are not loopback) the UDP protocol, which has no authentication, is refused while
// --protected-mode is yes (the default), and served with a WARNING line when it is no.
package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
)

const bindDefault = "127.0.0.1"

// listenConfig is what --bind and --protected-mode chose.
type listenConfig struct {
	addr    netip.Addr
	text    string // as given, without the brackets: "127.0.0.1", "::1", "0.0.0.0"
	protect bool
}

func defaultListen() listenConfig {
	return listenConfig{addr: netip.MustParseAddr(bindDefault), text: bindDefault, protect: true}
}

// setBind parses a --bind value; the error is printed by the flag package after the flag's name
// and the value.
func (l *listenConfig) setBind(v string) error {
	host := v
	if len(host) > 2 && strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("expected a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, ::1, 0.0.0.0)")
	}
	l.addr, l.text = a, host
	return nil
}

// setProtected parses a --protected-mode value.
func (l *listenConfig) setProtected(v string) error {
	switch v {
	case "yes":
		l.protect = true
	case "no":
		l.protect = false
	default:
		return fmt.Errorf("expected yes or no")
	}
	return nil
}

// isLoopback: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z. 0.0.0.0 and :: are not.
func (l *listenConfig) isLoopback() bool {
	return l.addr.Unmap().IsLoopback()
}

// check says whether the server may start. open names the front end that would serve clients
// without authentication. On a loopback address: nil, silently. Otherwise, protected mode on:
// the refusal (what, why, how to override) as an error (the caller prints it and exits 2);
// protected mode off: a WARNING line on w, then nil.
func (l *listenConfig) check(w io.Writer, prog, open string) error {
	if l.isLoopback() {
		return nil
	}
	if l.protect {
		return fmt.Errorf("%s: refusing to listen on %s (not a loopback address) without "+
			"authentication: anyone who can reach %s could use %s. Listen on a loopback "+
			"address (the default, --bind 127.0.0.1), or give --protected-mode no to "+
			"accept the risk (docs/security.md)",
			prog, l.text, l.text, open)
	}
	fmt.Fprintf(w, "%s: WARNING: listening on %s with --protected-mode no, without "+
		"authentication: anyone who can reach %s can use %s (docs/security.md)\n",
		prog, l.text, l.text, open)
	return nil
}

// udpAddr is the address to listen on with port, and the network for net.ListenUDP: "udp4" for
// an IPv4 address, ::ffff:a.b.c.d included (the IPv4 traffic to a.b.c.d, as a C server's socket
// on it gets; Go would otherwise open a dual-stack IPv6 socket for 0.0.0.0), "udp6" for an IPv6
// one, except :: which gets "udp": a dual-stack socket, as a C server's AF_INET6 socket on ::.
func (l *listenConfig) udpAddr(port int) (string, *net.UDPAddr) {
	a, network := l.addr, "udp6"
	switch {
	case a.Is4() || a.Is4In6():
		a, network = a.Unmap(), "udp4"
	case a.IsUnspecified():
		network = "udp"
	}
	return network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, uint16(port)))
}
