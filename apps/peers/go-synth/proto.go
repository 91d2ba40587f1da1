// The request protocol of docs/protocol.md (C: apps/common/proto.h): 32-byte little-endian
// request and reply headers.
package main

import "encoding/binary"

const (
	protoMagic   = 0x4a46
	protoVersion = 1
	headerLen    = 32
	maxDgram     = 2048 // larger datagrams are dropped and counted
	maxKey       = 256
	maxValue     = 1400
)

// Operations.
const (
	opPing = 0
	opSpin = 1
	opGet  = 2
	opPut  = 3
	opDel  = 4
	opScan = 5
)

// Reply statuses.
const (
	stOK          = 0
	stNotFound    = 1
	stBadRequest  = 2
	stUnsupported = 3
	stServerError = 4
	stTooLarge    = 5
)

// request is the decoded 32-byte request header.
type request struct {
	Magic    uint16
	Version  uint8
	Op       uint8
	Klass    uint8
	Flags    uint8
	KeyLen   uint16
	ValLen   uint32
	Reserved uint32
	ID       uint64
	Arg      uint64
}

// reply is the 32-byte reply header.
type reply struct {
	Magic      uint16
	Version    uint8
	Op         uint8
	Klass      uint8
	Status     uint8
	Reserved   uint16
	PayloadLen uint32
	Reserved2  uint32
	ID         uint64
	Result     uint64
}

// decodeRequest reads the header from b, which must hold at least headerLen bytes.
func decodeRequest(b []byte) request {
	_ = b[headerLen-1]
	le := binary.LittleEndian
	return request{
		Magic:    le.Uint16(b[0:]),
		Version:  b[2],
		Op:       b[3],
		Klass:    b[4],
		Flags:    b[5],
		KeyLen:   le.Uint16(b[6:]),
		ValLen:   le.Uint32(b[8:]),
		Reserved: le.Uint32(b[12:]),
		ID:       le.Uint64(b[16:]),
		Arg:      le.Uint64(b[24:]),
	}
}

// encode writes the request header into b[:headerLen] (clients and tests).
func (r *request) encode(b []byte) {
	_ = b[headerLen-1]
	le := binary.LittleEndian
	le.PutUint16(b[0:], r.Magic)
	b[2] = r.Version
	b[3] = r.Op
	b[4] = r.Klass
	b[5] = r.Flags
	le.PutUint16(b[6:], r.KeyLen)
	le.PutUint32(b[8:], r.ValLen)
	le.PutUint32(b[12:], r.Reserved)
	le.PutUint64(b[16:], r.ID)
	le.PutUint64(b[24:], r.Arg)
}

// encode writes the reply header into b[:headerLen].
func (r *reply) encode(b []byte) {
	_ = b[headerLen-1]
	le := binary.LittleEndian
	le.PutUint16(b[0:], r.Magic)
	b[2] = r.Version
	b[3] = r.Op
	b[4] = r.Klass
	b[5] = r.Status
	le.PutUint16(b[6:], r.Reserved)
	le.PutUint32(b[8:], r.PayloadLen)
	le.PutUint32(b[12:], r.Reserved2)
	le.PutUint64(b[16:], r.ID)
	le.PutUint64(b[24:], r.Result)
}

// decodeReply reads a reply header (clients and tests).
func decodeReply(b []byte) reply {
	_ = b[headerLen-1]
	le := binary.LittleEndian
	return reply{
		Magic:      le.Uint16(b[0:]),
		Version:    b[2],
		Op:         b[3],
		Klass:      b[4],
		Status:     b[5],
		Reserved:   le.Uint16(b[6:]),
		PayloadLen: le.Uint32(b[8:]),
		Reserved2:  le.Uint32(b[12:]),
		ID:         le.Uint64(b[16:]),
		Result:     le.Uint64(b[24:]),
	}
}

// handle computes the reply to a datagram of n bytes whose header is req (magic already
// checked). It runs the SPIN loop when asked. A SPIN over maxSpinNs (--max-spin-us) gets
// TOO_LARGE with result = maxSpinNs, so the client learns the cap (apps/common/synth.c).
func handle(req *request, n int, maxSpinNs uint64) reply {
	rep := reply{Magic: protoMagic, Version: protoVersion, Op: req.Op, Klass: req.Klass, ID: req.ID}
	switch {
	case req.Version != protoVersion || n != headerLen+int(req.KeyLen)+int(req.ValLen):
		rep.Status = stBadRequest
	case int(req.KeyLen) > maxKey || int(req.ValLen) > maxValue:
		rep.Status = stTooLarge
	case req.Op == opPing:
		rep.Status = stOK
	case req.Op == opSpin:
		if req.Arg > maxSpinNs {
			rep.Status = stTooLarge
			rep.Result = maxSpinNs
			break
		}
		spinNs(req.Arg)
		rep.Status = stOK
		rep.Result = req.Arg
	default: // GET, PUT, DEL, SCAN: not served by a synthetic server; unknown ops
		rep.Status = stUnsupported
	}
	return rep
}
