package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Dequantize converts len(dst) elements of type dt stored in src to float32.
// src must hold exactly dt.Bytes(len(dst)) bytes. Results equal the Python
// gguf package's (gguf.quants.dequantize) bit for bit: products are
// rounded to float32 one at a time, in its order.
func Dequantize(dt DType, src []byte, dst []float32) error {
	want, err := dt.Bytes(int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) != want {
		return fmt.Errorf("tensor: dequantize %v: %d bytes for %d elements, want %d", dt, len(src), len(dst), want)
	}
	var block func(b []byte, y []float32)
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return nil
	case F16:
		for i := range dst {
			dst[i] = half(src[2*i:])
		}
		return nil
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
		return nil
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
		return nil
	case Q4_0:
		block = dequantQ4_0
	case Q4_1:
		block = dequantQ4_1
	case Q5_0:
		block = dequantQ5_0
	case Q5_1:
		block = dequantQ5_1
	case Q8_0:
		block = dequantQ8_0
	case Q8_1:
		block = dequantQ8_1
	case Q2_K:
		block = dequantQ2_K
	case Q3_K:
		block = dequantQ3_K
	case Q4_K:
		block = dequantQ4_K
	case Q5_K:
		block = dequantQ5_K
	case Q6_K:
		block = dequantQ6_K
	case Q8_K:
		block = dequantQ8_K
	default:
		return &UnsupportedDTypeError{Format: "dequantize", DType: dt.String()}
	}
	bs, bb := dt.BlockSize(), dt.BlockBytes()
	for i := 0; i < len(dst)/bs; i++ {
		block(src[i*bb:(i+1)*bb], dst[i*bs:(i+1)*bs])
	}
	return nil
}

func half(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// mul and mad round each product to float32 (no fused multiply-add), as
// numpy does.
func mul(a, b float32) float32     { return float32(a * b) }
func mad(a, b, c float32) float32  { return float32(float32(a*b) + c) }
func msub(a, b, c float32) float32 { return float32(float32(a*b) - c) }

// Q4_0: d (f16), 16 bytes: element j is the low nibble of byte j, element
// j+16 the high nibble; value d·(q−8).
func dequantQ4_0(b []byte, y []float32) {
	d := half(b)
	for j, q := range b[2:18] {
		y[j] = mul(d, float32(int(q&0xF)-8))
		y[j+16] = mul(d, float32(int(q>>4)-8))
	}
}

// Q4_1: d, m (f16), nibbles as Q4_0; value d·q + m.
func dequantQ4_1(b []byte, y []float32) {
	d, m := half(b), half(b[2:])
	for j, q := range b[4:20] {
		y[j] = mad(d, float32(q&0xF), m)
		y[j+16] = mad(d, float32(q>>4), m)
	}
}

// Q5_0: d (f16), qh (u32: bit j is the 5th bit of element j), 16 bytes of
// nibbles as Q4_0; value d·(q−16).
func dequantQ5_0(b []byte, y []float32) {
	d, qh := half(b), binary.LittleEndian.Uint32(b[2:])
	for j, q := range b[6:22] {
		lo := int(q&0xF) | int((qh>>j)&1)<<4
		hi := int(q>>4) | int((qh>>(j+16))&1)<<4
		y[j] = mul(d, float32(lo-16))
		y[j+16] = mul(d, float32(hi-16))
	}
}

// Q5_1: d, m (f16), qh, nibbles; value d·q + m.
func dequantQ5_1(b []byte, y []float32) {
	d, m, qh := half(b), half(b[2:]), binary.LittleEndian.Uint32(b[4:])
	for j, q := range b[8:24] {
		lo := uint32(q&0xF) | ((qh>>j)&1)<<4
		hi := uint32(q>>4) | ((qh>>(j+16))&1)<<4
		y[j] = mad(d, float32(lo), m)
		y[j+16] = mad(d, float32(hi), m)
	}
}

// Q8_0: d (f16), 32 int8; value q·d.
func dequantQ8_0(b []byte, y []float32) {
	d := half(b)
	for j, q := range b[2:34] {
		y[j] = mul(float32(int8(q)), d)
	}
}

// Q8_1: d, s (f16), 32 int8; value q·d (s is the sum, unused here).
func dequantQ8_1(b []byte, y []float32) {
	d := half(b)
	for j, q := range b[4:36] {
		y[j] = mul(float32(int8(q)), d)
	}
}

// Q8_K: d (f32), 256 int8, 16 int16 block sums; value d·q.
func dequantQ8_K(b []byte, y []float32) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for j, q := range b[4:260] {
		y[j] = mul(d, float32(int8(q)))
	}
}

// Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of
// 2-bit values, d, dmin (f16). Element e = 128·c + 32·s + l lies in bits
// 2s of byte 32·c + l; its scale is byte e/16.
func dequantQ2_K(b []byte, y []float32) {
	scales, qs := b[:16], b[16:80]
	d, dmin := half(b[80:]), half(b[82:])
	for e := range 256 {
		c, s, l := e/128, (e%128)/32, e%32
		q := (qs[32*c+l] >> (2 * s)) & 3
		sc := scales[e/16]
		dl := mul(d, float32(sc&0xF))
		ml := mul(dmin, float32(sc>>4))
		y[e] = msub(dl, float32(q), ml)
	}
}

// Q3_K: hmask (32), qs (64), scales (12, 6-bit signed by −32), d (f16).
// Element e: low 2 bits as Q2_K, high bit (inverted: 0 means −4) is bit e/32
// of hmask[e%32]; scale index e/16.
func dequantQ3_K(b []byte, y []float32) {
	hmask, qs, sb := b[:32], b[32:96], b[96:108]
	d := half(b[108:])
	var scales [16]float32
	for i := range scales {
		lo := sb[i%8]
		if i >= 8 {
			lo >>= 4
		}
		hi := (sb[8+i%4] >> (2 * (i / 4))) & 3
		scales[i] = float32(int8((lo&0xF)|hi<<4) - 32)
	}
	for e := range 256 {
		c, s, l := e/128, (e%128)/32, e%32
		q := int8((qs[32*c+l] >> (2 * s)) & 3)
		if (hmask[l]>>(e/32))&1 == 0 {
			q -= 4
		}
		y[e] = mul(mul(d, scales[e/16]), float32(q))
	}
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (Q4_K, Q5_K).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// Q4_K: d, dmin (f16), 12 scale bytes, 128 bytes of nibbles: sub-block
// 2c holds the low nibbles of bytes 32c…32c+31, sub-block 2c+1 the high.
func dequantQ4_K(b []byte, y []float32) {
	d, dmin, scales, qs := half(b), half(b[2:]), b[4:16], b[16:144]
	for sb := range 8 {
		sc, m := scaleMinK4(sb, scales)
		dl, ml := mul(d, float32(sc)), mul(dmin, float32(m))
		c, shift := sb/2, uint(4*(sb%2))
		for l := range 32 {
			y[32*sb+l] = msub(dl, float32((qs[32*c+l]>>shift)&0xF), ml)
		}
	}
}

// Q5_K: as Q4_K plus qh (32 bytes): the 5th bit of element e is bit e/32
// of qh[e%32].
func dequantQ5_K(b []byte, y []float32) {
	d, dmin, scales, qh, qs := half(b), half(b[2:]), b[4:16], b[16:48], b[48:176]
	for sb := range 8 {
		sc, m := scaleMinK4(sb, scales)
		dl, ml := mul(d, float32(sc)), mul(dmin, float32(m))
		c, shift := sb/2, uint(4*(sb%2))
		for l := range 32 {
			q := (qs[32*c+l]>>shift)&0xF | ((qh[l]>>sb)&1)<<4
			y[32*sb+l] = msub(dl, float32(q), ml)
		}
	}
}

// Q6_K: ql (128), qh (64), 16 int8 scales, d (f16). In each half h of 128
// elements, element 32·g + l has its low nibble in ql[64h + l + 32·(g%2)]
// (g ≥ 2: high nibble) and its top 2 bits at bits 2g of qh[32h + l];
// value d·scale[e/16]·(q−32).
func dequantQ6_K(b []byte, y []float32) {
	ql, qh, sc := b[:128], b[128:192], b[192:208]
	d := half(b[208:])
	for e := range 256 {
		h, g, l := e/128, (e%128)/32, e%32
		lo := ql[64*h+l+32*(g%2)]
		if g >= 2 {
			lo >>= 4
		}
		q := int8((lo&0xF)|((qh[32*h+l]>>(2*g))&3)<<4) - 32
		y[e] = mul(mul(d, float32(int8(sc[e/16]))), float32(q))
	}
}

// Quantize converts float32 values to dt (F32, F16, BF16, Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1), equal bit for bit to gguf.quants.quantize. len(src)
// must be a whole number of blocks and dst exactly dt.Bytes(len(src)).
func Quantize(dt DType, src []float32, dst []byte) error {
	want, err := dt.Bytes(int64(len(src)))
	if err != nil {
		return err
	}
	if int64(len(dst)) != want {
		return fmt.Errorf("tensor: quantize %v: %d bytes for %d elements, want %d", dt, len(dst), len(src), want)
	}
	var block func(x []float32, b []byte)
	switch dt {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
		return nil
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], float16.Fromfloat32(v).Bits())
		}
		return nil
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], toBF16(v))
		}
		return nil
	case Q8_0:
		block = quantQ8_0
	case Q4_0:
		block = func(x []float32, b []byte) { quantSymmetric(x, b, 4) }
	case Q5_0:
		block = func(x []float32, b []byte) { quantSymmetric(x, b, 5) }
	case Q4_1:
		block = func(x []float32, b []byte) { quantAffine(x, b, 4) }
	case Q5_1:
		block = func(x []float32, b []byte) { quantAffine(x, b, 5) }
	default:
		return &UnsupportedDTypeError{Format: "quantize", DType: dt.String()}
	}
	bs, bb := dt.BlockSize(), dt.BlockBytes()
	for i := 0; i < len(src)/bs; i++ {
		block(src[i*bs:(i+1)*bs], dst[i*bb:(i+1)*bb])
	}
	return nil
}

// toBF16 rounds to nearest even and quiets NaNs, as ggml and gguf-py.
func toBF16(v float32) uint16 {
	n := math.Float32bits(v)
	if n&0x7fffffff > 0x7f800000 {
		return uint16((n&0xffff0000 | 64<<16) >> 16)
	}
	return uint16((uint64(n) + uint64(0x7fff+((n>>16)&1))) >> 16)
}

func putHalf(b []byte, v float32) { binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits()) }

// inverse is 1/d, or 0 when d is 0.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// roundAway rounds half away from zero (gguf-py's np_roundf).
func roundAway(v float32) float32 { return float32(math.Round(float64(v))) }

func quantQ8_0(x []float32, b []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	id := inverse(d)
	putHalf(b, d)
	for j, v := range x {
		b[2+j] = byte(int8(roundAway(float32(v * id))))
	}
}

// quantSymmetric is Q4_0 (bits 4) and Q5_0 (bits 5): d = max/−2^(bits−1)
// where max is the value of largest magnitude (first on ties).
func quantSymmetric(x []float32, b []byte, bits int) {
	half := float32(int(1) << (bits - 1))
	var mx, amax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	d := mx / -half
	id := inverse(d)
	top := float32(int(1)<<bits - 1)
	var q [32]uint8
	for j, v := range x {
		t := float32(math.Trunc(float64(float32(float32(v*id) + (half + 0.5)))))
		q[j] = uint8(min(max(t, 0), top)) // .astype(uint8).clip(0, top)
	}
	packNibbles(q[:], b, bits, d, 0, false)
}

// quantAffine is Q4_1 and Q5_1: d = (max−min)/(2^bits−1), m = min.
func quantAffine(x []float32, b []byte, bits int) {
	mx, mn := x[0], x[0]
	for _, v := range x {
		mx, mn = max(mx, v), min(mn, v)
	}
	top := float32(int(1)<<bits - 1)
	d := float32(mx-mn) / top
	id := inverse(d)
	var q [32]uint8
	for j, v := range x {
		t := float32(math.Trunc(float64(float32(float32(float32(v-mn)*id) + 0.5))))
		q[j] = uint8(min(max(t, 0), top))
	}
	packNibbles(q[:], b, bits, d, mn, true)
}

// packNibbles writes d [, m] [, qh], then the nibbles of q.
func packNibbles(q []uint8, b []byte, bits int, d, m float32, withMin bool) {
	putHalf(b, d)
	at := 2
	if withMin {
		putHalf(b[2:], m)
		at = 4
	}
	if bits == 5 {
		var qh uint32
		for j, v := range q {
			qh |= uint32(v>>4&1) << j
		}
		binary.LittleEndian.PutUint32(b[at:], qh)
		at += 4
	}
	for j := range 16 {
		b[at+j] = q[j]&0xF | q[j+16]<<4
	}
}
