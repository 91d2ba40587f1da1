package main

import (
	"bytes"
	"strings"
	"testing"
)

// --bind accepts numeric IPv4 and IPv6 addresses (brackets and zones too) and nothing else.
func TestBindFlag(t *testing.T) {
	for _, v := range []string{"127.0.0.1", "0.0.0.0", "::1", "[::1]", "::", "fe80::1%lo", "::ffff:127.0.0.1"} {
		l := defaultListen()
		if err := l.setBind(v); err != nil {
			t.Errorf("--bind %s refused: %v", v, err)
		}
	}
	for _, v := range []string{"", "localhost", "notanaddress", "127.0.0.1:80", "[::1", "1.2.3", "[]"} {
		l := defaultListen()
		if err := l.setBind(v); err == nil {
			t.Errorf("--bind %q accepted", v)
		}
	}
	l := defaultListen()
	if err := l.setProtected("maybe"); err == nil {
		t.Errorf("--protected-mode maybe accepted")
	}
}

// The loopback rule of apps/common/listen.c: 127.0.0.0/8, ::1, ::ffff:127.x.y.z; not 0.0.0.0 or ::.
func TestLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "::ffff:127.0.0.1": true,
		"0.0.0.0": false, "::": false, "10.0.0.1": false, "::ffff:10.0.0.1": false,
		"128.0.0.1": false, "::2": false,
	}
	for v, want := range cases {
		l := defaultListen()
		if err := l.setBind(v); err != nil {
			t.Fatalf("--bind %s: %v", v, err)
		}
		if got := l.isLoopback(); got != want {
			t.Errorf("isLoopback(%s) = %v, want %v", v, got, want)
		}
	}
	if d := defaultListen(); !d.isLoopback() {
		t.Errorf("the default is not loopback")
	}
}

// Protected mode refuses a non-loopback address; --protected-mode no warns instead.
func TestCheck(t *testing.T) {
	var w bytes.Buffer
	l := defaultListen()
	if err := l.check(&w, "go-synth", "X"); err != nil || w.Len() != 0 {
		t.Errorf("loopback: err %v, output %q", err, w.String())
	}
	_ = l.setBind("0.0.0.0")
	err := l.check(&w, "go-synth", "X")
	if err == nil || !strings.HasPrefix(err.Error(), "go-synth: refusing to listen on 0.0.0.0 (not a loopback address) without authentication: anyone who can reach 0.0.0.0 could use X.") ||
		!strings.Contains(err.Error(), "--protected-mode no") || w.Len() != 0 {
		t.Errorf("0.0.0.0, protected: err %v, output %q", err, w.String())
	}
	_ = l.setProtected("no")
	if err := l.check(&w, "go-synth", "X"); err != nil ||
		!strings.HasPrefix(w.String(), "go-synth: WARNING: listening on 0.0.0.0") {
		t.Errorf("0.0.0.0, --protected-mode no: err %v, output %q", err, w.String())
	}
	for v, want := range map[string]string{"0.0.0.0": "udp4", "127.0.0.1": "udp4",
		"::ffff:127.0.0.1": "udp4", "::1": "udp6", "::": "udp"} {
		_ = l.setBind(v)
		if network, _ := l.udpAddr(7000); network != want {
			t.Errorf("udpAddr(%s): network %s, want %s", v, network, want)
		}
	}
}
