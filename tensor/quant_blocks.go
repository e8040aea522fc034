package tensor

import (
	"encoding/binary"
	"math"
)

// Dequantisation of ggml's 32-element blocks. Each function reads one block
// b (BlockBytes long) and writes its 32 values to y. "Nibbles" below means
// 16 bytes holding 32 4-bit values: element j (j < 16) is the low nibble of
// byte j, element j+16 its high nibble.

// dequantQ4_0: d f16 | 16 bytes of nibbles q. Value d·(q−8).
func dequantQ4_0(b []byte, y []float32) {
	d, qs := half(b), b[2:18]
	y = y[:32]
	for j, q := range qs {
		y[j] = d * float32(int(q&0xF)-8)
		y[j+16] = d * float32(int(q>>4)-8)
	}
}

// dequantQ4_1: d f16 | m f16 | nibbles q. Value d·q + m.
func dequantQ4_1(b []byte, y []float32) {
	d, m, qs := half(b), half(b[2:]), b[4:20]
	y = y[:32]
	for j, q := range qs {
		y[j] = mad(d, float32(q&0xF), m)
		y[j+16] = mad(d, float32(q>>4), m)
	}
}

// dequantQ5_0: d f16 | qh u32 | nibbles. Bit j of qh is the 5th bit of
// element j. Value d·(q−16).
func dequantQ5_0(b []byte, y []float32) {
	d, qh, qs := half(b), binary.LittleEndian.Uint32(b[2:]), b[6:22]
	y = y[:32]
	for j, q := range qs {
		lo := uint32(q&0xF) | (qh>>j&1)<<4
		hi := uint32(q>>4) | (qh>>(j+16)&1)<<4
		y[j] = d * float32(int(lo)-16)
		y[j+16] = d * float32(int(hi)-16)
	}
}

// dequantQ5_1: d f16 | m f16 | qh u32 | nibbles. Value d·q + m.
func dequantQ5_1(b []byte, y []float32) {
	d, m, qh, qs := half(b), half(b[2:]), binary.LittleEndian.Uint32(b[4:]), b[8:24]
	y = y[:32]
	for j, q := range qs {
		lo := uint32(q&0xF) | (qh>>j&1)<<4
		hi := uint32(q>>4) | (qh>>(j+16)&1)<<4
		y[j] = mad(d, float32(lo), m)
		y[j+16] = mad(d, float32(hi), m)
	}
}

// dequantQ8_0: d f16 | 32 int8 q. Value d·q.
func dequantQ8_0(b []byte, y []float32) {
	d, qs := half(b), b[2:34]
	y = y[:32]
	for j, q := range qs {
		y[j] = d * float32(int8(q))
	}
}

// dequantQ8_1: d f16 | s f16 (d·Σq, for dot products; unused) | 32 int8 q.
// Value d·q. (gguf 0.19.0's size table still says 40 bytes, the layout of
// old ggml with f32 d and s; ggml-common.h's block_q8_1 is 36.)
func dequantQ8_1(b []byte, y []float32) {
	d, qs := half(b), b[4:36]
	y = y[:32]
	for j, q := range qs {
		y[j] = d * float32(int8(q))
	}
}

// Quantisation, as gguf.quants (0.19.0): each function reads 32 values x and
// writes one block b.

// quantQ8_0: d = max|x|/127, q = round(x/d) half away from zero.
func quantQ8_0(x []float32, b []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	id := inverse(d)
	putHalf(b, d)
	for j, v := range x[:32] {
		b[2+j] = truncByte(roundAway(v * id))
	}
}

func quantQ4_0(x []float32, b []byte) { quantSymmetric(x, b, 4) }
func quantQ5_0(x []float32, b []byte) { quantSymmetric(x, b, 5) }
func quantQ4_1(x []float32, b []byte) { quantAffine(x, b, 4) }
func quantQ5_1(x []float32, b []byte) { quantAffine(x, b, 5) }

// quantSymmetric is Q4_0 (bits 4) and Q5_0 (bits 5). mx is the value of
// largest magnitude (the first on ties), d = mx/−2^(bits−1), so mx maps to
// level 0; q = trunc(x/d + 2^(bits−1) + 0.5) clipped to 2^bits − 1.
func quantSymmetric(x []float32, b []byte, bits uint) {
	offset := float32(int(1)<<(bits-1)) + 0.5
	top := byte(1)<<bits - 1
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	d := mx / -float32(int(1)<<(bits-1))
	id := inverse(d)
	var q [32]byte
	for j, v := range x[:32] {
		q[j] = min(truncByte(float32(v*id)+offset), top)
	}
	putHalf(b, d)
	packQuants(&q, b[2:], bits)
}

// quantAffine is Q4_1 and Q5_1: m = min x, d = (max−min)/(2^bits−1),
// q = trunc((x−m)/d + 0.5) clipped to 2^bits − 1.
func quantAffine(x []float32, b []byte, bits uint) {
	top := byte(1)<<bits - 1
	mx, mn := x[0], x[0]
	for _, v := range x {
		mx, mn = max(mx, v), min(mn, v)
	}
	d := (mx - mn) / float32(top)
	id := inverse(d)
	var q [32]byte
	for j, v := range x[:32] {
		q[j] = min(truncByte(float32((v-mn)*id)+0.5), top)
	}
	putHalf(b, d)
	putHalf(b[2:], mn)
	packQuants(&q, b[4:], bits)
}

// packQuants writes [qh u32 if bits is 5] then the low nibbles of q.
func packQuants(q *[32]byte, b []byte, bits uint) {
	if bits == 5 {
		var qh uint32
		for j, v := range q {
			qh |= uint32(v>>4&1) << j
		}
		binary.LittleEndian.PutUint32(b, qh)
		b = b[4:]
	}
	for j := range 16 {
		b[j] = q[j]&0xF | q[j+16]<<4
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// inverse is 1/d, or 0 when d is 0 (gguf: np.where(d == 0, 0, 1 / d)).
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// roundAway rounds half away from zero, as gguf's np_roundf and C's roundf.
// (Exact: a float32 converts to float64 exactly, and the result is an
// integer that float32 holds.)
func roundAway(v float32) float32 { return float32(math.Round(float64(v))) }

// truncByte converts v to a byte the way numpy's astype(uint8) and
// astype(int8) do on x86-64: truncate toward zero to int32 and keep the low
// 8 bits; NaN and values outside int32 give 0 (the x86 "integer indefinite"
// 0x80000000). Go leaves such conversions to the platform, so they are
// spelled out. Only inputs that overflow gguf's arithmetic reach the odd
// cases.
func truncByte(v float32) byte {
	if !(v >= -(1<<31) && v < 1<<31) {
		return 0
	}
	return byte(int32(v))
}
