package tensor

import (
	"encoding/binary"
	"math"
)

// Dequantisation of ggml's k-quants: super-blocks of 256 elements split
// into sub-blocks of 16 or 32 elements with their own small scales. Each
// function reads one block b and writes its 256 values to y, in the loop
// order of ggml's dequantize_row_* reference code. Where gguf's numpy code
// forms a per-sub-block scale first (dl = d·sc), so do these, and then round
// dl·q; the float32 conversions keep that order.

// dequantQ2_K: scales [16]u8 (low nibble scale, high nibble min, one per 16
// elements) | qs [64]u8 of 2-bit values | d f16 | dmin f16.
// Element 128·h + 32·s + l (h < 2, s < 4, l < 32) is bits 2s..2s+1 of
// qs[32h + l]. Value (d·scale)·q − dmin·min.
func dequantQ2_K(b []byte, y []float32) {
	scales, qs := b[:16], b[16:80]
	d, dmin := half(b[80:]), half(b[82:])
	y = y[:256]
	for h := range 2 {
		q := qs[32*h : 32*h+32]
		for s := range 4 {
			shift := uint(2 * s)
			for k := range 2 { // two sub-blocks of 16 per shift
				is := 8*h + 2*s + k
				dl := d * float32(scales[is]&0xF)
				ml := dmin * float32(scales[is]>>4)
				out := y[128*h+32*s+16*k : 128*h+32*s+16*k+16]
				for l, v := range q[16*k : 16*k+16] {
					out[l] = msub(dl, float32(v>>shift&3), ml)
				}
			}
		}
	}
}

// dequantQ3_K: hmask [32]u8 | qs [64]u8 | scales [12]u8 | d f16.
// Element e = 128·h + 32·s + l: its low 2 bits as in Q2_K; its high bit is
// bit e/32 of hmask[l], and subtracts 4 when clear. The 16 scales are 6-bit,
// biased by 32: scale i has its low 4 bits in nibble i/8 of byte i%8 and its
// high 2 bits at bits 2·(i/4) of byte 8 + i%4. Value (d·scale)·q.
func dequantQ3_K(b []byte, y []float32) {
	hmask, qs, sb := b[:32], b[32:96], b[96:108]
	d := half(b[108:])
	var dl [16]float32
	for i := range dl {
		lo := sb[i%8] >> (4 * (i / 8)) & 0xF
		hi := sb[8+i%4] >> (2 * (i / 4)) & 3
		dl[i] = d * float32(int(lo|hi<<4)-32)
	}
	y = y[:256]
	for h := range 2 {
		q := qs[32*h : 32*h+32]
		for s := range 4 {
			shift, bit := uint(2*s), uint(4*h+s)
			out := y[128*h+32*s : 128*h+32*s+32]
			for l, v := range q {
				lv := int(v >> shift & 3)
				if hmask[l]>>bit&1 == 0 {
					lv -= 4
				}
				out[l] = dl[8*h+2*s+l/16] * float32(lv)
			}
		}
	}
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0…7) from the
// 12 scale bytes of Q4_K and Q5_K: bytes 0–3 hold scales 0–3 (low 6 bits)
// and the top 2 bits of scales 4–7; bytes 4–7 the same for the mins; bytes
// 8–11 the low nibbles of scales 4–7 and (high nibbles) mins 4–7.
func scaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | q[j-4]>>6<<4, q[j+4]>>4 | q[j]>>6<<4
}

// dequantQ4_K: d f16 | dmin f16 | scales [12]u8 | qs [128]u8. Sub-block
// 2c (32 elements) is the low nibbles of qs[32c…32c+31], sub-block 2c+1 the
// high nibbles. Value (d·sc)·q − dmin·m.
func dequantQ4_K(b []byte, y []float32) {
	d, dmin, scales, qs := half(b), half(b[2:]), b[4:16], b[16:144]
	y = y[:256]
	for sb := range 8 {
		sc, m := scaleMinK4(sb, scales)
		dl, ml := d*float32(sc), dmin*float32(m)
		shift := uint(4 * (sb % 2))
		out := y[32*sb : 32*sb+32]
		for l, v := range qs[32*(sb/2) : 32*(sb/2)+32] {
			out[l] = msub(dl, float32(v>>shift&0xF), ml)
		}
	}
}

// dequantQ5_K: as Q4_K with qh [32]u8 between scales and qs: the 5th bit of
// element 32·sb + l is bit sb of qh[l].
func dequantQ5_K(b []byte, y []float32) {
	d, dmin, scales, qh, qs := half(b), half(b[2:]), b[4:16], b[16:48], b[48:176]
	y = y[:256]
	for sb := range 8 {
		sc, m := scaleMinK4(sb, scales)
		dl, ml := d*float32(sc), dmin*float32(m)
		shift := uint(4 * (sb % 2))
		out := y[32*sb : 32*sb+32]
		for l, v := range qs[32*(sb/2) : 32*(sb/2)+32] {
			q := v>>shift&0xF | qh[l]>>sb&1<<4
			out[l] = msub(dl, float32(q), ml)
		}
	}
}

// dequantQ6_K: ql [128]u8 | qh [64]u8 | scales [16]i8 | d f16. In half h
// (128 elements), element 32·g + l (g < 4, l < 32) has its low 4 bits in
// ql[64h + 32·(g%2) + l] (low nibble for g < 2, high for g ≥ 2) and its top
// 2 bits at bits 2g of qh[32h + l]. Value (d·scale[e/16])·(q − 32).
func dequantQ6_K(b []byte, y []float32) {
	ql, qh, sc := b[:128], b[128:192], b[192:208]
	d := half(b[208:])
	var dl [16]float32
	for i := range dl {
		dl[i] = d * float32(int8(sc[i]))
	}
	y = y[:256]
	for h := range 2 {
		lo, hi := ql[64*h:64*h+64], qh[32*h:32*h+32]
		out, s := y[128*h:128*h+128], dl[8*h:8*h+8]
		for l := range 32 {
			q1 := int(lo[l]&0xF|hi[l]&3<<4) - 32
			q2 := int(lo[l+32]&0xF|hi[l]>>2&3<<4) - 32
			q3 := int(lo[l]>>4|hi[l]>>4&3<<4) - 32
			q4 := int(lo[l+32]>>4|hi[l]>>6<<4) - 32
			is := l / 16
			out[l] = s[is] * float32(q1)
			out[l+32] = s[is+2] * float32(q2)
			out[l+64] = s[is+4] * float32(q3)
			out[l+96] = s[is+6] * float32(q4)
		}
	}
}

// dequantQ8_K: d f32 | qs [256]i8 | bsums [16]i16 (sums of 16 q, for dot
// products; unused). Value d·q, as ggml's dequantize_row_q8_K.
func dequantQ8_K(b []byte, y []float32) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(b))
	y = y[:256]
	for j, q := range b[4:260] {
		y[j] = d * float32(int8(q))
	}
}

// kvaluesIQ4 are the 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl):
// a 4-bit index q stands for kvaluesIQ4[q].
var kvaluesIQ4 = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// dequantIQ4_NL: d f16 | nibbles (as Q4_0's) indexing kvaluesIQ4. Value
// d·kvaluesIQ4[q].
func dequantIQ4_NL(b []byte, y []float32) {
	d, qs := half(b), b[2:18]
	y = y[:32]
	for j, q := range qs {
		y[j] = d * float32(kvaluesIQ4[q&0xF])
		y[j+16] = d * float32(kvaluesIQ4[q>>4])
	}
}

// iq4xsScale is the signed 6-bit scale of sub-block j (0…7, 32 elements)
// of an IQ4_XS block: its low 4 bits are nibble j%2 of scales_l[j/2]
// (bytes 4–7), its high 2 bits bits 2j of scales_h (u16, bytes 2–3); the
// scale is that minus 32.
func iq4xsScale(b []byte, j int) int {
	lo := b[4+j/2] >> (4 * (j % 2)) & 0xF
	hi := binary.LittleEndian.Uint16(b[2:]) >> (2 * j) & 3
	return int(lo) | int(hi)<<4 - 32
}

// dequantIQ4_XS: d f16 | scales_h u16 | scales_l [4]u8 | qs [128]u8.
// Sub-block j (32 elements) is qs[16j…16j+15] as IQ4_NL's nibbles, value
// (d·iq4xsScale(j))·kvaluesIQ4[q].
func dequantIQ4_XS(b []byte, y []float32) {
	d, qs := half(b), b[8:136]
	y = y[:256]
	for j := range 8 {
		dl := d * float32(iq4xsScale(b, j))
		out := y[32*j : 32*j+32]
		for l, q := range qs[16*j : 16*j+16] {
			out[l] = dl * float32(kvaluesIQ4[q&0xF])
			out[l+16] = dl * float32(kvaluesIQ4[q>>4])
		}
	}
}
