package cpu

import (
	"encoding/binary"
	"math"

	"github.com/vkllm/vkllm/tensor"
)

// Packed weights (fast path, Q8_0, Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K,
// Q6_K, IQ4_NL and IQ4_XS, where SIMD has the kernels): at Upload the weight is copied into groups of eight rows,
// so that the kernels give each row one lane of a vector and form a
// block's integer sum for eight rows with eight vpdpbusd (AVX-512 VNNI,
// packed_amd64.s) or vpmaddubsw and vpmaddwd (AVX2,
// packed_avx2_amd64.s), as llama.cpp's repacked Q4_0 8x8 kernels do,
// instead of reducing each row's lanes. In prefill, the VNNI set takes
// Q4_0 and Q4_K two groups at a time (packedPairs: group g in the low
// half of 512-bit vectors, g+1 in the high half; Q4_0 against eight
// activation rows a call, Q4_K four), every lane's steps those of the
// eight-row kernels, so the values are the same; on AMD Zen 5 a 512-bit
// vpdpbusd issues as fast as a 256-bit one, and these ran at 1.7× (Q4_K)
// and 2.0× (Q4_0) the 8x4 kernels (CPU time, loaded 2-core machine).
//
// Group g (rows 8g…8g+7; rows past the weight's last are zero) holds its
// nb blocks in order, block j at (g·nb + j)·packBlockBytes:
//
//	Q8_0 (272 bytes)  d_w of rows 0…7 (f16), then the value bytes
//	Q4_0 (144 bytes)  d_w of rows 0…7, then the nibble bytes
//	Q4_1 (160 bytes)  d_w of rows 0…7, m_w of rows 0…7, the nibble bytes
//	IQ4_NL (144)      as Q4_0; a nibble q stands for kvaluesIQ4[q]
//	Q5_0 (176)        d_w of rows 0…7, the fifth bits h, the nibble bytes
//	Q5_1 (192)        d_w, m_w of rows 0…7, the fifth bits h, the nibbles
//
// the value bytes being, for k = 0…7 and row r = 0…7, values 4k…4k+3 of
// row r plus 128 (as unsigned bytes); the nibble bytes, for k = 0…3 and
// r = 0…7, bytes 4k…4k+3 of row r's 16 (value i in the low nibble of
// byte i, value 16+i in its high nibble, as in the file). The fifth bits
// of Q5_0 and Q5_1 (32 bytes) follow the nibble bytes' order: bit j = 2k+half of
// byte 4r+e is the fifth bit of row r's value 16·half+4k+e, the nibble
// in byte 4k+e of its 16 (so that a shift and a mask give the nibble
// vector k's fifth bits, low nibbles half 0, high 1).
//
// Q4_K (1184 bytes per super-block of 256 values): d of rows 0…7 (f16),
// dmin of rows 0…7, the 6-bit sub-block scales sc (byte 32+8s+r) and
// mins m (96+8s+r) unpacked, then per sub-block pair p = 0…3 the nibble
// bytes at 160+256p+32k+4r: bytes 32p+4k…32p+4k+3 of row r's 128 (low
// nibbles sub-block 2p, high 2p+1, as in the file). Per sub-block s in
// order: acc = fma(float32(Σ q·x), (d·sc_s)·d_x,s, acc) and
// accm = fma(dmin·m_s, s_x,s, accm); out = acc − accm (packedK4Go).
// Q5_K (1440 bytes) is Q4_K's layout and steps, the nibble bytes from
// the file's qs, then its qh (32 bytes a row) at 1184+32k+4r (bytes
// 4k…4k+3 of row r's): bit s of a byte is the fifth bit of sub-block s's
// value at that position, q = nibble + 16·bit.
//
// IQ4_XS (1104 bytes per super-block of 256 values): d of rows 0…7
// (f16), the signed sub-block scales ls_s (byte 16+8s+r, −32…31), then
// per sub-block s = 0…7 its 128 nibble bytes at 80+128s as a Q4_0
// block's. Per sub-block s in order: acc = fma(float32(Σ kvaluesIQ4[q]·x),
// (d·ls_s)·d_x,s, acc) (d·ls_s exact); out = acc (packedXSGo).
//
// Q6_K (1680 bytes per super-block of 256 values): d of rows 0…7 (f16),
// the signed scales sc_t of the sixteen 16-value sub-blocks (byte
// 16+8t+r), then the file's ql (128 bytes a row) as four chunks q of 32
// at 144+256q+32k+4r (bytes 32q+4k…32q+4k+3 of row r's ql) and its qh
// (64) as two at 1168+256h+32k+4r. Group g = 0…7 of 32 values (h = g/4,
// c = g%4) takes chunk q = 2h + c%2 of ql (low nibbles for c < 2, high
// for c ≥ 2) and bits 2c, 2c+1 of chunk h of qh, as the file does. Per
// group g in order, with a = Σ (q−32)·x over its first 16 values and b
// over the last 16 (exact: started from −32·Σx, neg per 16 values):
// acc = fma(float32(a·sc_2g + b·sc_2g+1), d·d_x,g, acc) (the integer
// exact); out = acc (packedQ6Go).
//
// The IQ4 kernels (VNNI only) look each nibble up as kvaluesIQ4[q]+128,
// an unsigned byte for vpdpbusd, and start each block's sum from −128·Σx
// (neg), so the sum is Σ kvaluesIQ4[q]·x, exact.
//
// The arithmetic, per (weight row, activation row) and block j after
// block j, from acc = mins = 0:
//
//	sum  = Σ w·x (Q8_0), Σ (q−8)·x (Q4_0), Σ q·x (Q4_1),
//	       Σ (q−16)·x (Q5_0, q the five bits), Σ q·x (Q5_1),
//	       Σ kvaluesIQ4[q]·x (IQ4_NL), exact in int32
//	acc  = fma(float32(sum), d_w·d_x, acc)    d_w·d_x rounded to float32
//	mins = fma(m_w, s_x, mins)                Q4_1, Q5_1 only
//	out  = acc (Q8_0, Q4_0, Q5_0, IQ4_NL), acc + mins (Q4_1, Q5_1)
//
// which the one-activation-row and four-activation-row kernels both do,
// so a value does not depend on the batch or the tiling; packed8Go is
// the same in Go, for the tests.

// packBlockBytes is the size of one packed block of eight rows (0: dt is
// not packed).
func packBlockBytes(dt tensor.DType) int {
	switch dt {
	case tensor.Q8_0:
		return 272
	case tensor.Q4_0, tensor.IQ4_NL:
		return 144
	case tensor.Q4_1:
		return 160
	case tensor.Q5_0:
		return 176
	case tensor.Q5_1:
		return 192
	case tensor.Q4_K:
		return 1184
	case tensor.Q5_K:
		return 1440
	case tensor.IQ4_XS:
		return 1104
	case tensor.Q6_K:
		return 1680
	}
	return 0
}

// packValues is how many values of a row one packed block holds.
func packValues(dt tensor.DType) int {
	switch dt {
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_XS:
		return 256
	}
	return 32
}

// packedRows (the x4 kernels) computes eight weight rows (the packed
// group w, nb blocks of packValues values) against the n activation rows
// i … i+n−1 (n a multiple of four, taken four at a time) of the quantised
// activations qx, dx, sx (rows of k, k/32, k/32 values, k =
// nb·packValues) with neg their −off·Σx per block of negValues where
// the set takes it (packedSet.negOff; rows of k/negValues values): out[c·os + r] for activation row i+c and weight
// row r (os ≥ 8).
type packedRows func(w []byte, nb int, qx []int8, dx, sx []float32, neg []int32, i, n int, out []float32, os int)

// packedGroups (the x1 kernels) computes the ng groups of w, one after
// the other, against activation row i: out[8g+r] for group g's row r.
type packedGroups func(w []byte, nb int, qx []int8, dx, sx []float32, neg []int32, i, ng int, out []float32)

// packedPairs (the x16 kernels) is packedRows for two groups at once:
// w holds group g and, gb bytes on, group g+1; out[c·os + r] for weight
// row r < 16 (os ≥ 16), each value bitwise the x4 kernel's.
type packedPairs func(w []byte, gb, nb int, qx []int8, dx, sx []float32, neg []int32, i, n int, out []float32, os int)

// packedSet is one instruction set's packed kernels, per dtype (a dtype
// missing from by, or a nil kernel: none), and q8_0Off, what its Q8_0
// kernels add to each weight value to make it an unsigned byte (128: the
// VNNI kernels read w+128 and take −128·Σx as neg; 0: the AVX2 ones turn
// the bytes back into w and take no neg).
type packedSet struct {
	name    string
	by      map[tensor.DType]packedKinds
	q8_0Off int32
}

// packedKinds are one dtype's kernels: one row, four rows, and two groups
// against eight or four rows (x16, nil where the set has none).
type packedKinds struct {
	x1  packedGroups
	x4  packedRows
	x16 packedPairs
}

// with is k with the two-group kernel x16.
func (k packedKinds) with(x16 packedPairs) packedKinds {
	k.x16 = x16
	return k
}

// pairs returns s's two-group kernel for dt, or nil.
func (s *packedSet) pairs(dt tensor.DType) packedPairs { return s.by[dt].x16 }

// kernels returns s's kernels for dt, or nil ones.
func (s *packedSet) kernels(dt tensor.DType) (x1 packedGroups, x4 packedRows) {
	k := s.by[dt]
	return k.x1, k.x4
}

// negOff is the offset s's kernels of dt take −off·Σx for (0: they take
// no neg).
func (s *packedSet) negOff(dt tensor.DType) int32 {
	switch dt {
	case tensor.Q8_0:
		return s.q8_0Off
	case tensor.Q4_0:
		return 8
	case tensor.Q5_0:
		return 16
	case tensor.IQ4_NL, tensor.IQ4_XS:
		return 128
	case tensor.Q6_K:
		return 32
	}
	return 0
}

// negValues is how many values each −off·Σx of dt's neg covers.
func negValues(dt tensor.DType) int {
	if dt == tensor.Q6_K {
		return 16 // its scales' sub-blocks
	}
	return 32
}

// packed is the set in use, empty where this build has none (then
// weights are not packed); usePacked installs one.
var packed packedSet

func usePacked(s packedSet) { packed = s }

// packedKernels returns dt's packed kernels in use, or nil ones.
func packedKernels(dt tensor.DType) (x1 packedGroups, x4 packedRows) { return packed.kernels(dt) }

// pack8 packs raw (rows rows of rb bytes, nb blocks of dt each) by eight
// rows, groups g0…g1−1 into pk (the whole packed weight).
func pack8(dt tensor.DType, raw []byte, rows, rb, nb int, pk []byte, g0, g1 int) {
	bb, src := packBlockBytes(dt), dt.BlockBytes()
	hdr := bb - 128 // the d_w (and Q4_1's and Q5_1's m_w, Q5_0's and Q5_1's fifth bits)
	if dt == tensor.Q8_0 {
		hdr = 16
	}
	le := binary.LittleEndian
	for g := g0; g < g1; g++ {
		for r := 0; r < 8 && 8*g+r < rows; r++ {
			row := raw[(8*g+r)*rb:][:nb*src]
			for j := range nb {
				blk, dst := row[j*src:][:src], pk[(g*nb+j)*bb:][:bb]
				copy(dst[2*r:2*r+2], blk[:2])
				if dt == tensor.Q6_K {
					copy(dst[2*r:2*r+2], blk[208:210])
					for t := range 16 {
						dst[16+8*t+r] = blk[192+t]
					}
					for k := range 8 {
						for q := range 4 {
							le.PutUint32(dst[144+256*q+32*k+4*r:], le.Uint32(blk[32*q+4*k:]))
						}
						for h := range 2 {
							le.PutUint32(dst[1168+256*h+32*k+4*r:], le.Uint32(blk[128+32*h+4*k:]))
						}
					}
					continue
				}
				if dt == tensor.IQ4_XS {
					for s := range 8 {
						dst[16+8*s+r] = byte(int8(iq4xsScale(blk, s)))
						for k := range 4 {
							le.PutUint32(dst[80+128*s+32*k+4*r:], le.Uint32(blk[8+16*s+4*k:]))
						}
					}
					continue
				}
				if dt == tensor.Q4_K || dt == tensor.Q5_K {
					copy(dst[16+2*r:16+2*r+2], blk[2:4])
					sc, m := scalesK4(blk[4:16])
					for sb := range 8 {
						dst[32+8*sb+r], dst[96+8*sb+r] = sc[sb], m[sb]
					}
					qs := blk[16:]
					if dt == tensor.Q5_K {
						qs = blk[48:]
						for k := range 8 {
							le.PutUint32(dst[1184+32*k+4*r:], le.Uint32(blk[16+4*k:]))
						}
					}
					for p := range 4 {
						for k := range 8 {
							le.PutUint32(dst[160+256*p+32*k+4*r:], le.Uint32(qs[32*p+4*k:]))
						}
					}
					continue
				}
				if dt == tensor.Q4_1 || dt == tensor.Q5_1 {
					copy(dst[16+2*r:16+2*r+2], blk[2:4])
				}
				if dt == tensor.Q5_0 || dt == tensor.Q5_1 {
					qh := le.Uint32(blk[src-20:])
					for e := range 4 {
						// bit j of the byte: value 16·(j%2) + 4·(j/2) + e's
						v := qh >> e
						lo, hi := every4th(v), every4th(v>>16)
						dst[hdr-32+4*r+e] = evenBits[lo] | evenBits[hi]<<1
					}
				}
				if dt == tensor.Q8_0 {
					for k := range 8 {
						le.PutUint32(dst[hdr+32*k+4*r:], le.Uint32(blk[2+4*k:])^0x80808080)
					}
					continue
				}
				qs := blk[src-16:]
				for k := range 4 {
					le.PutUint32(dst[hdr+32*k+4*r:], le.Uint32(qs[4*k:]))
				}
			}
		}
	}
}

// every4th gathers bits 0, 4, 8 and 12 of v into bits 0…3.
func every4th(v uint32) byte {
	return byte(v&1 | v>>3&2 | v>>6&4 | v>>9&8)
}

// evenBits[c] has bit i of c at bit 2i.
var evenBits = [16]byte{0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55}

// negSums writes −off·Σx of every block of the quantised rows qx into
// neg (off from packedSet.negOff; blocks of 32 values, or of 16 where
// neg is twice as long). It adds eight bytes at a time (negSumsGo is the
// plain loop): each biased to v+128 (0…255), added in 16-bit lanes, the
// block's vals·128 taken off at the end, so the sums are exact. One decode MatMul's activation row took about 1 µs the
// plain way, a fifth of the whole op on a 64 KiB weight.
func negSums(qx []int8, off int32, neg []int32) {
	const bias, lo = 0x8080808080808080, 0x00ff00ff00ff00ff
	qb, vals := i8bytes(qx), blockValues(qx, neg)
	for j := range neg {
		b := qb[vals*j : vals*j+vals]
		var w uint64 // four 16-bit lanes, at most 4·2·255 each
		for i := 0; i < vals; i += 8 {
			x := binary.LittleEndian.Uint64(b[i:]) ^ bias // any byte order: the lanes' total is the same
			w += x&lo + x>>8&lo
		}
		s := int32((w*0x0001000100010001)>>48) - int32(vals)*128
		neg[j] = -off * s
	}
}

// blockValues is 32, or 16 where neg has a value per 16 of qx.
func blockValues(qx []int8, neg []int32) int {
	if len(neg) > 0 && len(qx) == 16*len(neg) {
		return 16
	}
	return 32
}

// negSumsGo is negSums by the plain loop (for the tests).
func negSumsGo(qx []int8, off int32, neg []int32) {
	vals := blockValues(qx, neg)
	for j := range neg {
		var s int32
		for _, v := range qx[vals*j : vals*j+vals] {
			s += int32(v)
		}
		neg[j] = -off * s
	}
}

// packed8Go is the packed kernels' arithmetic in Go for one activation
// row: out[r] for the eight rows of the packed group w.
func packed8Go(dt tensor.DType, w []byte, nb int, qx []int8, dx, sx []float32, out *[8]float32) {
	bb := packBlockBytes(dt)
	hdr := bb - 128
	if dt == tensor.Q8_0 {
		hdr = 16
	}
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		packedK4Go(dt, w, nb, qx, dx, sx, out)
		return
	case tensor.IQ4_XS:
		packedXSGo(w, nb, qx, dx, out)
		return
	case tensor.Q6_K:
		packedQ6Go(w, nb, qx, dx, out)
		return
	}
	for r := range 8 {
		var acc, mins float32
		for j := range nb {
			blk, x := w[j*bb:][:bb], qx[32*j:][:32]
			var sum int32
			for e := range 32 { // value e of row r: byte e%4 of its dword k
				if dt == tensor.Q8_0 {
					sum += int32(int8(blk[hdr+32*(e/4)+4*r+e%4]^0x80)) * int32(x[e])
					continue
				}
				b := blk[hdr+32*(e%16/4)+4*r+e%4] // values e and e+16 share a byte
				q := int32(b & 15)
				if e >= 16 {
					q = int32(b >> 4)
				}
				switch dt {
				case tensor.Q4_0:
					q -= 8
				case tensor.Q5_0, tensor.Q5_1:
					q |= int32(blk[hdr-32+4*r+e%4]>>(2*(e%16/4)+e/16)&1) << 4
					if dt == tensor.Q5_0 {
						q -= 16
					}
				case tensor.IQ4_NL:
					q = int32(kvaluesIQ4[q])
				}
				sum += q * int32(x[e])
			}
			dw := f16at(blk[2*r:])
			acc = fma32(float32(sum), dw*dx[j], acc)
			if dt == tensor.Q4_1 || dt == tensor.Q5_1 {
				mins = fma32(f16at(blk[16+2*r:]), sx[j], mins)
			}
		}
		out[r] = acc + mins
	}
}

// packedK4Go is packed8Go for Q4_K and Q5_K (nb super-blocks).
func packedK4Go(dt tensor.DType, w []byte, nb int, qx []int8, dx, sx []float32, out *[8]float32) {
	bb := packBlockBytes(dt)
	for r := range 8 {
		var acc, accm float32
		for j := range nb {
			blk := w[j*bb:][:bb]
			d, dmin := f16at(blk[2*r:]), f16at(blk[16+2*r:])
			for sb := range 8 {
				p, shift := sb/2, 4*(sb%2)
				x := qx[256*j+32*sb:][:32]
				var sum int32
				for k := range 8 {
					for e := range 4 {
						q := blk[160+256*p+32*k+4*r+e] >> shift & 15
						if dt == tensor.Q5_K {
							q |= blk[1184+32*k+4*r+e] >> sb & 1 << 4
						}
						sum += int32(q) * int32(x[4*k+e])
					}
				}
				sc, m := float32(blk[32+8*sb+r]), float32(blk[96+8*sb+r])
				acc = fma32(float32(sum), d*sc*dx[8*j+sb], acc)
				accm = fma32(dmin*m, sx[8*j+sb], accm)
			}
		}
		out[r] = acc - accm
	}
}

// packedXSGo is packed8Go for IQ4_XS (nb super-blocks).
func packedXSGo(w []byte, nb int, qx []int8, dx []float32, out *[8]float32) {
	for r := range 8 {
		var acc float32
		for j := range nb {
			blk := w[j*1104:][:1104]
			d := f16at(blk[2*r:])
			for s := range 8 {
				x := qx[256*j+32*s:][:32]
				var sum int32
				for e := range 32 { // as a Q4_0 block's nibbles
					b := blk[80+128*s+32*(e%16/4)+4*r+e%4]
					q := b & 15
					if e >= 16 {
						q = b >> 4
					}
					sum += int32(kvaluesIQ4[q]) * int32(x[e])
				}
				ls := float32(int8(blk[16+8*s+r]))
				acc = fma32(float32(sum), d*ls*dx[8*j+s], acc)
			}
		}
		out[r] = acc
	}
}

// packedQ6Go is packed8Go for Q6_K (nb super-blocks).
func packedQ6Go(w []byte, nb int, qx []int8, dx []float32, out *[8]float32) {
	for r := range 8 {
		var acc float32
		for j := range nb {
			blk := w[j*1680:][:1680]
			d := f16at(blk[2*r:])
			for g := range 8 {
				h, c := g/4, g%4
				x := qx[256*j+32*g:][:32]
				var half [2]int32
				for e := range 32 {
					k, i := e/4, 32*(e/4)+4*r+e%4
					q := int32(blk[144+256*(2*h+c%2)+i]) >> (4 * (c / 2)) & 15
					q |= int32(blk[1168+256*h+i]) >> (2 * c) & 3 << 4
					half[k/4] += (q - 32) * int32(x[e])
				}
				s := half[0]*int32(int8(blk[16+8*(2*g)+r])) + half[1]*int32(int8(blk[16+8*(2*g+1)+r]))
				acc = fma32(float32(s), d*dx[8*j+g], acc)
			}
		}
		out[r] = acc
	}
}

// fma32 is a·b + c rounded once to float32 (through float64, which is
// exact here: a is an integer below 2^16 and b, c float32s of the
// magnitudes the tests use).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// matMulPacked is matMulFast for a packed weight: activations quantised
// once, then every group of eight weight rows against the activation rows
// by fours (the x4 kernel) and the rest one by one (x1).
func (b *Backend) matMulPacked(d, xs, wt *Tensor) {
	s := &b.scratch
	s.pd[0], s.pw[0] = d, wt
	b.matMulPackedMulti(s.pd[:], xs, s.pw[:])
	s.pd[0], s.pw[0] = nil, nil
}

// matMulPackedMulti is matMulPacked for several weights packed alike
// (one dtype, rows of xs.Cols values) against the same activations,
// ds[i] = xs · ws[i]ᵀ: the activations are quantised once and one pool
// job goes over the row groups of all the weights in turn, as if they
// were one weight. Each value is the kernel's on its row group, as with
// one weight at a time.
func (b *Backend) matMulPackedMulti(ds []*Tensor, xs *Tensor, ws []*Tensor) {
	dt := ws[0].DT
	n, k := xs.Rows, xs.Cols
	nb := k / packValues(dt) // packed blocks per row
	qx, dx, sx := b.quantizeActivations(xs)
	var neg []int32
	if off := packed.negOff(dt); off != 0 {
		s, nd := &b.scratch, k/negValues(dt)
		s.neg = grow(s.neg, n*nd)
		neg = s.neg
		b.Parallel(n, func(lo, hi int) { negSums(qx[lo*k:hi*k], off, neg[lo*nd:hi*nd]) })
	}
	x1, x4 := packedKernels(dt)
	x16 := packed.pairs(dt)
	gb := nb * packBlockBytes(dt)
	// first[i]: weight i's first group among all the weights' groups
	first := append(b.scratch.first[:0], 0)
	for i, wt := range ws {
		first = append(first, first[i]+(wt.Rows+7)/8)
	}
	b.scratch.first = first
	groups := first[len(ws)]
	// Prefill: tasks of about prefillTaskBytes of weights (an even number
	// of groups, at least a pair, and at least four tasks a thread), so
	// that a tile of activation rows, which the task's groups all take in
	// turn, is read from cache once per task rather than once per pair.
	per, least := min(max(2, prefillTaskBytes/gb), max(2, groups/(4*b.Threads)))&^1, 2
	if n < 4 {
		// Decode: tasks of about decodeTaskBytes, each thread streaming
		// through its own contiguous part (see matMulFast), shrinking to
		// decodeLeastBytes at its end.
		part := (groups + b.Threads - 1) / b.Threads
		chunks := max(1, (part*gb+decodeTaskBytes-1)/decodeTaskBytes)
		per = (part + chunks - 1) / chunks
		least = max(1, decodeLeastBytes/gb)
	}
	for w := range b.Threads {
		b.scratch.buf(b.Threads, w, 8*xTile)
	}
	b.Pool.RunRangesGuided(groups, per, least, func(w, t0, t1 int) {
		// tile computes the ng groups at wg against activation rows i0 … i1−1
		// (at most xTile): by quads with x16, two groups at a time where
		// the set has it, else (and for a last odd group) x4, one group at
		// a time, then the rest with x1 over all ng groups; row i's outputs
		// at out[(i−i0)·os:], its group g's at 8g on.
		tile := func(wg []byte, ng, i0, i1 int, out []float32, os int) {
			quads := (i1 - i0) &^ 3
			g := 0
			if x16 != nil && quads > 0 && os >= 16 {
				for ; g+2 <= ng; g += 2 {
					x16(wg[g*gb:(g+2)*gb], gb, nb, qx, dx, sx, neg, i0, quads, out[8*g:], os)
				}
			}
			for ; g < ng && quads > 0; g++ {
				x4(wg[g*gb:(g+1)*gb], nb, qx, dx, sx, neg, i0, quads, out[8*g:], os)
			}
			for i := i0 + quads; i < i1; i++ {
				x1(wg, nb, qx, dx, sx, neg, i, ng, out[(i-i0)*os:])
			}
		}
		for wi, wt := range ws {
			g0, g1 := max(t0, first[wi])-first[wi], min(t1, first[wi+1])-first[wi]
			if g0 >= g1 {
				continue
			}
			d, m := ds[wi], wt.Rows
			full := min(g1, m/8) // groups g0 … full−1 have eight rows: into the output rows themselves
			short := max(g0, full) < g1
			for i0 := 0; i0 < n; i0 += xTile {
				i1 := min(i0+xTile, n)
				if g0 < full {
					tile(wt.Packed[g0*gb:full*gb], full-g0, i0, i1, d.F32[i0*m+8*g0:], m)
				}
				if short { // the weight's last group, short (m%8 rows): by scratch
					g, out := m/8, b.scratch.work[w][:8*xTile]
					tile(wt.Packed[g*gb:(g+1)*gb], 1, i0, i1, out, 8)
					for i := i0; i < i1; i++ {
						copy(d.F32[i*m+8*g:][:m-8*g], out[8*(i-i0):])
					}
				}
			}
		}
	})
}
