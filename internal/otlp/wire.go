package otlp

import "encoding/binary"

// Protocol buffer wire types
// (https://protobuf.dev/programming-guides/encoding/).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

// appendVarint appends a varint field, left out when 0 as proto3 does.
func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

// appendFixed64 appends a fixed64 field, left out when 0.
func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

// appendBytes appends a length-delimited field, even an empty one (an
// element of a repeated field is written whatever its value).
func appendBytes(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(v)))
	return append(b, v...)
}

func appendString(b []byte, field int, s string) []byte {
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s)))
	return append(b, s...)
}

// appendPacked appends a packed repeated varint field, left out when
// empty.
func appendPacked[T int32 | int64](b []byte, field int, vs []T) []byte {
	if len(vs) == 0 {
		return b
	}
	n := 0
	for _, v := range vs {
		n += uvarintLen(uint64(v))
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(n))
	for _, v := range vs {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// appendMessage appends a message field whose body enc appends. The
// length goes before the body, which is written in place: a byte is
// kept for the length, and a body of 128 bytes or more moves up by the
// bytes its length needs beyond it.
func appendMessage(b []byte, field int, enc func([]byte) []byte) []byte {
	b = appendTag(b, field, wireBytes)
	at := len(b)
	b = enc(append(b, 0))
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	var lb [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lb[:], uint64(n))
	b = append(b, lb[:l-1]...)
	copy(b[at+l:], b[at+1:at+1+n])
	copy(b[at:], lb[:l])
	return b
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
