package cpu

import (
	"encoding/binary"

	"github.com/vkllm/vkllm/tensor"
)

// Fast dots for the rest of the block types people download: IQ4_NL,
// IQ4_XS, Q5_0, Q5_1, Q5_K, Q3_K and Q2_K, against activations quantised
// by quantizeQ8 (per block of 32: qx int8, dx the scale, sx = dx·Σqx), as
// the types of dot.go. Each block of 32 values is an exact integer dot
// Σ q_w·q_x (times the weight's integer sub-scales where it has two per
// 32), then one float32 step acc += (scale_w·d_x)·Σ; a minimum adds
// min_w·s_x (per 32) or (dmin·d_x)·Σ m·Σq_x (Q2_K, per 16). The
// assembly (dotmore_amd64.s, where there is some) agrees to float32
// rounding; each kernel is one fixed order, so MatMul stays batch
// invariant.
var (
	dotIQ4_NL = dotIQ4_NLGo // (w row bytes, qx, dx, sx unused)
	dotIQ4_XS = dotIQ4_XSGo // (w row bytes, qx, dx, sx unused)
	dotQ5_0   = dotQ5_0Go   // (w row bytes, qx, dx, sx unused)
	dotQ5_1   = dotQ5_1Go   // (w row bytes, qx, dx, sx)
	dotQ5_K   = dotQ5_KGo   // (w row bytes, qx, dx, sx)
	dotQ3_K   = dotQ3_KGo   // (w row bytes, qx, dx, sx unused)
	dotQ2_K   = dotQ2_KGo   // (w row bytes, qx, dx, sx unused)
)

// q8Dot is the one-row kernel of the types above (nil for the others).
func q8Dot(dt tensor.DType) func(w []byte, qx []int8, dx, sx []float32) float32 {
	switch dt {
	case tensor.IQ4_NL:
		return dotIQ4_NL
	case tensor.IQ4_XS:
		return dotIQ4_XS
	case tensor.Q5_0:
		return dotQ5_0
	case tensor.Q5_1:
		return dotQ5_1
	case tensor.Q5_K:
		return dotQ5_K
	case tensor.Q3_K:
		return dotQ3_K
	case tensor.Q2_K:
		return dotQ2_K
	}
	return nil
}

// kvaluesIQ4 are IQ4_NL's and IQ4_XS's 16 levels (ggml's kvalues_iq4nl).
var kvaluesIQ4 = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4_NL (18 bytes per 32): d f16, qs [16]byte of nibbles as Q4_0's;
// w = d·kvaluesIQ4[q].
func dotIQ4_NLGo(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc float32
	for b, d := range dx {
		blk, q := w[b*18:b*18+18], qx[b*32:b*32+32]
		var s int32
		for i := range 16 {
			s += int32(kvaluesIQ4[blk[2+i]&15]) * int32(q[i])
			s += int32(kvaluesIQ4[blk[2+i]>>4]) * int32(q[16+i])
		}
		acc += f16at(blk) * d * float32(s)
	}
	return acc
}

// iq4xsScale is sub-block j's signed scale (−32…31) of an IQ4_XS block:
// low 4 bits nibble j%2 of scales_l[j/2] (bytes 4–7), high 2 bits bits
// 2j of scales_h (u16, bytes 2–3).
func iq4xsScale(blk []byte, j int) int32 {
	lo := blk[4+j/2] >> (4 * (j % 2)) & 15
	hi := binary.LittleEndian.Uint16(blk[2:]) >> (2 * j) & 3
	return int32(lo) | int32(hi)<<4 - 32
}

// IQ4_XS (136 bytes per 256): d f16, scales_h u16, scales_l [4]byte,
// qs [128]byte; sub-block j (32 values) is qs[16j:16j+16] as IQ4_NL's
// nibbles, w = d·scale_j·kvaluesIQ4[q]. Per sub-block:
// acc += (d·d_x)·(scale·Σ), the product scale·Σ exact in int32.
func dotIQ4_XSGo(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc float32
	for b := range len(w) / 136 {
		blk := w[b*136 : b*136+136]
		d := f16at(blk)
		for j := range 8 {
			qs, q := blk[8+16*j:8+16*j+16], qx[b*256+32*j:b*256+32*j+32]
			var s int32
			for i := range 16 {
				s += int32(kvaluesIQ4[qs[i]&15]) * int32(q[i])
				s += int32(kvaluesIQ4[qs[i]>>4]) * int32(q[16+i])
			}
			acc += d * dx[b*8+j] * float32(iq4xsScale(blk, j)*s)
		}
	}
	return acc
}

// Q5_0 (22 bytes per 32): d f16, qh u32 (bit j the 5th bit of element
// j), nibbles; w = d·(q − 16).
func dotQ5_0Go(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc float32
	for b, d := range dx {
		blk, q := w[b*22:b*22+22], qx[b*32:b*32+32]
		qh := binary.LittleEndian.Uint32(blk[2:])
		var s int32
		for i := range 16 {
			lo := int32(blk[6+i]&15) | int32(qh>>i&1)<<4
			hi := int32(blk[6+i]>>4) | int32(qh>>(i+16)&1)<<4
			s += (lo-16)*int32(q[i]) + (hi-16)*int32(q[16+i])
		}
		acc += f16at(blk) * d * float32(s)
	}
	return acc
}

// Q5_1 (24 bytes per 32): d f16, m f16, qh u32, nibbles; w = d·q + m.
func dotQ5_1Go(w []byte, qx []int8, dx, sx []float32) float32 {
	var acc, mins float32
	for b, d := range dx {
		blk, q := w[b*24:b*24+24], qx[b*32:b*32+32]
		qh := binary.LittleEndian.Uint32(blk[4:])
		var s int32
		for i := range 16 {
			lo := int32(blk[8+i]&15) | int32(qh>>i&1)<<4
			hi := int32(blk[8+i]>>4) | int32(qh>>(i+16)&1)<<4
			s += lo*int32(q[i]) + hi*int32(q[16+i])
		}
		acc += f16at(blk) * d * float32(s)
		mins += f16at(blk[2:]) * sx[b]
	}
	return acc + mins
}

// Q5_K (176 bytes per 256): Q4_K's d, dmin and scales, then qh [32]byte
// (bit s of qh[e] the 5th bit of element 32s + e), then Q4_K's qs;
// w = d·sc_s·q − dmin·m_s.
func dotQ5_KGo(w []byte, qx []int8, dx, sx []float32) float32 {
	var acc, mins float32
	for b := range len(w) / 176 {
		blk := w[b*176 : b*176+176]
		d, dmin := f16at(blk), f16at(blk[2:])
		sc, m := scalesK4(blk[4:16])
		qh := blk[16:48]
		for s := range 8 {
			qs, shift := blk[48+32*(s/2):48+32*(s/2)+32], 4*(s%2)
			q := qx[b*256+s*32 : b*256+s*32+32]
			var isum int32
			for e, v := range q {
				isum += (int32(qs[e]>>shift&15) | int32(qh[e]>>s&1)<<4) * int32(v)
			}
			acc += d * float32(sc[s]) * dx[b*8+s] * float32(isum)
			mins += dmin * float32(m[s]) * sx[b*8+s]
		}
	}
	return acc - mins
}

// Q3_K (110 bytes per 256): hmask [32]byte, qs [64]byte, scales [12]byte,
// d f16. Element 128h + 32c + l (group g = 4h + c) has low bits
// qs[32h + l] >> 2c & 3 and loses 4 when bit g of hmask[l] is clear; its
// scale is the 6-bit sc_(2g + l/16) − 32. w = d·sc·q; per group:
// acc += (d·d_x,g)·(sc_2g·Σ_first16 + sc_2g+1·Σ_last16).
func dotQ3_KGo(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc float32
	for b := range len(w) / 110 {
		blk := w[b*110 : b*110+110]
		hmask, qs, sb := blk[:32], blk[32:96], blk[96:108]
		d := f16at(blk[108:])
		for g := range 8 {
			h, c := g/4, g%4
			q := qx[b*256+g*32 : b*256+g*32+32]
			var isum int32
			for half := range 2 {
				i := 2*g + half
				sc := int32(sb[i%8]>>(4*(i/8))&15|(sb[8+i%4]>>(2*(i/4))&3)<<4) - 32
				var s int32
				for l := 16 * half; l < 16*half+16; l++ {
					v := int32(qs[32*h+l] >> (2 * c) & 3)
					if hmask[l]>>g&1 == 0 {
						v -= 4
					}
					s += v * int32(q[l])
				}
				isum += sc * s
			}
			acc += d * dx[b*8+g] * float32(isum)
		}
	}
	return acc
}

// Q2_K (84 bytes per 256): scales [16]byte (low nibble scale, high nibble
// min, per 16 values), qs [64]byte, d f16, dmin f16. Element
// 128h + 32c + l (group g = 4h + c) is qs[32h + l] >> 2c & 3, sub-block
// 2g + l/16; w = d·sc·q − dmin·m. Per group:
// acc += (d·d_x,g)·Σ_halves sc·Σ q_w·q_x, mins += (dmin·d_x,g)·Σ_halves m·Σ q_x.
func dotQ2_KGo(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc, mins float32
	for b := range len(w) / 84 {
		blk := w[b*84 : b*84+84]
		scales, qs := blk[:16], blk[16:80]
		d, dmin := f16at(blk[80:]), f16at(blk[82:])
		for g := range 8 {
			h, c := g/4, g%4
			q := qx[b*256+g*32 : b*256+g*32+32]
			var isum, msum int32
			for half := range 2 {
				sc := scales[2*g+half]
				var s, sq int32
				for l := 16 * half; l < 16*half+16; l++ {
					s += int32(qs[32*h+l]>>(2*c)&3) * int32(q[l])
					sq += int32(q[l])
				}
				isum += int32(sc&15) * s
				msum += int32(sc>>4) * sq
			}
			acc += d * dx[b*8+g] * float32(isum)
			mins += dmin * dx[b*8+g] * float32(msum)
		}
	}
	return acc - mins
}
