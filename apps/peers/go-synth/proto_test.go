package main

import (
	"bytes"
	"testing"
)

// The byte layouts of docs/protocol.md, field by field, little-endian.
func TestRequestLayout(t *testing.T) {
	req := request{
		Magic: protoMagic, Version: protoVersion, Op: opSpin, Klass: 1, Flags: 0,
		KeyLen: 0x0102, ValLen: 0x03040506, Reserved: 0,
		ID: 0x1122334455667788, Arg: 0x99aabbccddeeff00,
	}
	var b [headerLen]byte
	req.encode(b[:])
	want := []byte{
		0x46, 0x4a, // 0: magic 0x4a46
		0x01,       // 2: version
		0x01,       // 3: op SPIN
		0x01,       // 4: klass
		0x00,       // 5: flags
		0x02, 0x01, // 6: key_len
		0x06, 0x05, 0x04, 0x03, // 8: val_len
		0x00, 0x00, 0x00, 0x00, // 12: reserved
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // 16: id
		0x00, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, // 24: arg
	}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("request bytes\n got %x\nwant %x", b, want)
	}
	if got := decodeRequest(want); got != req {
		t.Fatalf("decodeRequest: got %+v want %+v", got, req)
	}
}

func TestReplyLayout(t *testing.T) {
	rep := reply{
		Magic: protoMagic, Version: protoVersion, Op: opScan, Klass: 7, Status: stTooLarge,
		Reserved: 0, PayloadLen: 0x0a0b0c0d, Reserved2: 0,
		ID: 0x0102030405060708, Result: 1000,
	}
	var b [headerLen]byte
	rep.encode(b[:])
	want := []byte{
		0x46, 0x4a, // 0: magic
		0x01,       // 2: version
		0x05,       // 3: op SCAN
		0x07,       // 4: klass
		0x05,       // 5: status TOO_LARGE
		0x00, 0x00, // 6: reserved
		0x0d, 0x0c, 0x0b, 0x0a, // 8: payload_len
		0x00, 0x00, 0x00, 0x00, // 12: reserved2
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // 16: id
		0xe8, 0x03, 0, 0, 0, 0, 0, 0, // 24: result 1000
	}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("reply bytes\n got %x\nwant %x", b, want)
	}
	if got := decodeReply(want); got != rep {
		t.Fatalf("decodeReply: got %+v want %+v", got, rep)
	}
}

func TestHandleStatuses(t *testing.T) {
	itersPerNs = 1 // no calibration needed: tiny spins
	base := request{Magic: protoMagic, Version: protoVersion, ID: 42, Klass: 3}
	const capNs = 1_000_000 // the default --max-spin-us, 1 ms
	cases := []struct {
		name   string
		mod    func(r *request)
		n      int
		status uint8
		result uint64
	}{
		{"ping", func(r *request) { r.Op = opPing }, headerLen, stOK, 0},
		{"spin", func(r *request) { r.Op = opSpin; r.Arg = 500 }, headerLen, stOK, 500},
		{"spin over the cap", func(r *request) { r.Op = opSpin; r.Arg = capNs + 1 }, headerLen, stTooLarge, capNs},
		{"get", func(r *request) { r.Op = opGet; r.KeyLen = 15 }, headerLen + 15, stUnsupported, 0},
		{"put", func(r *request) { r.Op = opPut; r.KeyLen = 15; r.ValLen = 100 }, headerLen + 115, stUnsupported, 0},
		{"del", func(r *request) { r.Op = opDel; r.KeyLen = 15 }, headerLen + 15, stUnsupported, 0},
		{"scan", func(r *request) { r.Op = opScan; r.KeyLen = 15; r.Arg = 10 }, headerLen + 15, stUnsupported, 0},
		{"unknown op", func(r *request) { r.Op = 99 }, headerLen, stUnsupported, 0},
		{"key_len mismatch", func(r *request) { r.Op = opGet; r.KeyLen = 15 }, headerLen, stBadRequest, 0},
		{"trailing bytes", func(r *request) { r.Op = opPing }, headerLen + 3, stBadRequest, 0},
		{"bad version", func(r *request) { r.Op = opPing; r.Version = 2 }, headerLen, stBadRequest, 0},
		{"key too large", func(r *request) { r.Op = opGet; r.KeyLen = maxKey + 1 }, headerLen + maxKey + 1, stTooLarge, 0},
	}
	for _, c := range cases {
		r := base
		c.mod(&r)
		rep := handle(&r, c.n, capNs)
		if rep.Status != c.status || rep.Result != c.result || rep.ID != 42 || rep.Klass != 3 ||
			rep.Op != r.Op || rep.Magic != protoMagic || rep.Version != protoVersion {
			t.Errorf("%s: got %+v, want status %d result %d", c.name, rep, c.status, c.result)
		}
	}
}

// --max-spin-us: a SPIN of exactly the cap runs; one ns more gets TOO_LARGE with the cap as
// its result, whatever the cap (1 us .. 10 s) and however large the request.
func TestSpinCap(t *testing.T) {
	itersPerNs = 1
	cases := []struct {
		capNs, arg uint64
		status     uint8
		result     uint64
	}{
		{1000, 1000, stOK, 1000},
		{1000, 1001, stTooLarge, 1000},
		{1000, 0, stOK, 0},
		{spinCapDefaultUs * 1000, spinCapDefaultUs*1000 + 1, stTooLarge, spinCapDefaultUs * 1000},
		{spinCapMaxUs * 1000, spinCapMaxUs*1000 + 1, stTooLarge, spinCapMaxUs * 1000},
		{spinCapMaxUs * 1000, ^uint64(0), stTooLarge, spinCapMaxUs * 1000},
	}
	for _, c := range cases {
		req := request{Magic: protoMagic, Version: protoVersion, Op: opSpin, ID: 7, Arg: c.arg}
		rep := handle(&req, headerLen, c.capNs)
		if rep.Status != c.status || rep.Result != c.result {
			t.Errorf("cap %d ns, SPIN %d ns: got status %d result %d, want %d %d",
				c.capNs, c.arg, rep.Status, rep.Result, c.status, c.result)
		}
	}
}

// The loop runs round(ns * rate) iterations: counts scale linearly with ns (no timing asserted).
func TestSpinScaling(t *testing.T) {
	rate := calibrate()
	if rate <= 0 {
		t.Fatalf("calibrate: rate %v", rate)
	}
	for _, ns := range []uint64{0, 1, 1000, 10_000, 1_000_000} {
		want := uint64(float64(ns)*rate + 0.5)
		if got := itersFor(ns); got != want {
			t.Errorf("itersFor(%d) = %d, want %d", ns, got, want)
		}
	}
	a, b := itersFor(1_000_000), itersFor(10_000_000)
	if a == 0 || b < 9*a || b > 11*a {
		t.Errorf("iterations do not scale with ns: 1 ms -> %d, 10 ms -> %d", a, b)
	}
	// The chain is the specified LCG: two steps from seed 0 by hand.
	x1 := uint64(1)*lcgMul + lcgAdd
	if got := spinIters(2, 0); got != x1*lcgMul+lcgAdd {
		t.Errorf("spinIters(2, 0) = %#x, want %#x", got, x1*lcgMul+lcgAdd)
	}
	if spinIters(0, 6) != 7 {
		t.Errorf("spinIters(0, seed) must return seed|1")
	}
}
