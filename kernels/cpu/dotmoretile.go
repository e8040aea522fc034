package cpu

import (
	"encoding/binary"
	"unsafe"

	"github.com/vkllm/vkllm/tensor"
)

// Prefill tiles of dotmore.go's types and Q6_K. The one-row kernels
// unpack a weight row's blocks again for every activation row; a tile
// unpacks each weight row once per MatMul (into the worker's scratch,
// 4.5 bytes per value) into one form for all eight types, then dots it
// with the activation rows four at a time (q8Tile4 and its variants,
// dotmoretile_amd64.s):
//
//	per block b of 32 values, 64 bytes: the 32 values as int8 in
//	element order, then 16 int16 integer scales (eight for values
//	0…15, eight for 16…31: the sub-block scale, or 1), and d_b, the
//	float32 that multiplies d_x (d, or the super-block's d)
//
// For each activation row the kernel does what the one-row assembly
// does, lane for lane: Σ = vpmaddwd(vpmaddubsw(|w|, x·sign w), scales)
// (int32 lanes, exact), acc = fma(float(Σ), d_b·d_x,b, acc), block after
// block, lanes reduced by HSUM; the minima are added as the one-row
// kernel adds them (moreTileKind.mins). So every value is bitwise the
// one-row kernel's, whether it is computed in a tile or alone. Where
// there is no tile kernel (q8Tile4 nil: the pure-Go kernels), MatMul
// calls the one-row kernel for every pair.

// q8Tile4 is the four-activation-row kernel over an unpacked row (nil
// without one): out[c] = the lanes' sum for activation row c, whose
// values are at qx[c·xs:], scales at dx[c·ds:]. q8Tile4U is the same
// for rows with no negative value (faster: no sign trick).
// q8Tile4Ones is q8Tile4 for rows whose scales are all 1 (faster where
// AVX-512 VNNI makes the integer dot one instruction).
var q8Tile4, q8Tile4U, q8Tile4Ones func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32)

// q8Tile4M is q8Tile4U plus Q5_1's minimum term, as dotQ5_1 adds it:
// out[c] += Σ_b float32(m_b·s_x,b), one running float32 sum in block
// order, s_x,b of row c at sx4[4b+c].
var q8Tile4M func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32, m, sx4 []float32)

// minsK8x4 is Q5_K's minimum term for four activation rows (scaled sums
// at sx[c·ds:]) in the one-row kernel's order (nil without it): lane s
// sums fma(dmin, m_s·s_x,s, ·) over the super-blocks, reduced by HSUM.
var minsK8x4 func(m, dmin, sx []float32, ds int, out *[4]float32)

// unpackedRow is one weight row in the tiles' form, in a worker's
// scratch.
type unpackedRow struct {
	q  []byte    // (nb·64) values and scales per block
	d  []float32 // (nb) d_b
	q2 []byte    // Q2_K: the minimum as a second row (values 1, scales m)
	d2 []float32 // Q2_K: dmin per block
	m  []float32 // Q5_1: m per block; Q5_K: m_s per sub-block (nb)
	dm []float32 // Q5_K: dmin per super-block (nb/8)
	// Q5_1, in a thread's first row only: the scaled sums of a tile's
	// activation rows four by four, block by block (xTile·nb)
	sx4 []float32
}

// moreTileKind is one type's unpacker and how its minimum comes in.
type moreTileKind struct {
	unpack   func(w []byte, u *unpackedRow)
	one      func(w []byte, qx []int8, dx, sx []float32) float32 // the one-row kernel
	mins     int                                                 // minsNone, minsBlock (Q5_1), minsLanes (Q5_K), minsRow (Q2_K)
	unsigned bool                                                // no value is negative: q8Tile4U
	ones     bool                                                // signed values, every scale 1: q8Tile4Ones
}

const (
	minsNone  = iota
	minsBlock // + Σ_b float32(m_b·s_x,b), one running float32 sum (q8Tile4M)
	minsLanes // − minsK8x4(m, dmin, s_x)
	minsRow   // − the tile of the second row (q2, d2)
)

// moreTile is dt's tile (ok false: none, or no tile kernel on this CPU):
// dotmore.go's types and Q6_K.
func moreTile(dt tensor.DType) (moreTileKind, bool) {
	if q8Tile4 == nil || !littleEndian {
		return moreTileKind{}, false
	}
	return moreTileKindOf(dt)
}

// moreTileKindOf is dt's unpacker, whether or not there is a tile kernel.
func moreTileKindOf(dt tensor.DType) (moreTileKind, bool) {
	k := moreTileKind{one: q8Dot(dt)}
	switch dt {
	case tensor.IQ4_NL:
		k.unpack, k.ones = unpackIQ4_NL, true
	case tensor.IQ4_XS:
		k.unpack = unpackIQ4_XS
	case tensor.Q5_0:
		k.unpack, k.ones = unpackQ5_0, true
	case tensor.Q5_1:
		k.unpack, k.mins, k.unsigned = unpackQ5_1, minsBlock, true
	case tensor.Q5_K:
		k.unpack, k.mins, k.unsigned = unpackQ5_K, minsLanes, true
	case tensor.Q3_K:
		k.unpack = unpackQ3_K
	case tensor.Q2_K:
		k.unpack, k.mins, k.unsigned = unpackQ2_K, minsRow, true
	case tensor.Q6_K: // dot.go's, the same arithmetic
		k.unpack, k.one = unpackQ6_K, dotQ6_K
	}
	return k, k.unpack != nil
}

// moreTileFloats is the worker scratch (float32s) one unpacked row of
// k values takes.
func moreTileFloats(k int) int {
	nb := k / 32
	return 2*(16*nb+nb) + 2*nb + 8
}

// carveRows gives each of threads workers rowsPerTask unpacked rows of
// k values (s.rows[w·rowsPerTask:]) in its scratch.
func (s *fastScratch) carveRows(threads, k int) {
	size := moreTileFloats(k)
	s.rows = grow(s.rows, threads*rowsPerTask)
	for w := range threads {
		buf := s.buf(threads, w, rowsPerTask*size+xTile*k/32)
		for r := range rowsPerTask {
			s.rows[w*rowsPerTask+r].carve(buf[r*size:(r+1)*size], k/32)
		}
		s.rows[w*rowsPerTask].sx4 = buf[rowsPerTask*size:]
	}
}

// carve makes u a row of nb blocks in buf (moreTileFloats long).
func (u *unpackedRow) carve(buf []float32, nb int) {
	u.q, buf = f32bytes(buf[:16*nb]), buf[16*nb:]
	u.d, buf = buf[:nb], buf[nb:]
	u.q2, buf = f32bytes(buf[:16*nb]), buf[16*nb:]
	u.d2, buf = buf[:nb], buf[nb:]
	u.m, buf = buf[:nb], buf[nb:]
	u.dm = buf[:nb/8]
}

func f32bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// tileRows computes dst[i, j] (dst (n, m)) for the weight rows [j0, j1)
// and all n activation rows of the quantised activations qx, dx, sx
// (rows of k, k/32, k/32 values): each weight row unpacked once, into
// rows[j−j0]; then, by tiles of xTile activation rows (in cache while
// the unpacked rows pass by), four activation rows at a time, and the
// last i1−i0 mod 4 of a tile by one, the one-row kernel.
func (t moreTileKind) tileRows(dst []float32, m int, raw []byte, rb, k int, qx []int8, dx, sx []float32,
	j0, j1, n int, rows []unpackedRow) {
	nb := k / 32
	for j := j0; j < j1; j++ {
		t.unpack(raw[j*rb:(j+1)*rb], &rows[j-j0])
	}
	var out, mout [4]float32
	tile := q8Tile4
	if t.unsigned {
		tile = q8Tile4U
	} else if t.ones {
		tile = q8Tile4Ones
	}
	sx4 := rows[0].sx4
	for i0 := 0; i0 < n; i0 += xTile {
		i1 := min(i0+xTile, n)
		if t.mins == minsBlock {
			for i := i0; i+4 <= i1; i += 4 {
				g := sx4[(i-i0)*nb:]
				for c := range 4 {
					for b, v := range sx[(i+c)*nb : (i+c+1)*nb] {
						g[4*b+c] = v
					}
				}
			}
		}
		for j := j0; j < j1; j++ {
			u := &rows[j-j0]
			i := i0
			for ; i+4 <= i1; i += 4 {
				if t.mins == minsBlock {
					q8Tile4M(u.q, u.d, qx[i*k:], k, dx[i*nb:], nb, &out, u.m[:nb], sx4[(i-i0)*nb:])
				} else {
					tile(u.q, u.d, qx[i*k:], k, dx[i*nb:], nb, &out)
				}
				switch t.mins {
				case minsLanes:
					minsK8x4(u.m[:nb], u.dm[:nb/8], sx[i*nb:], nb, &mout)
					for c := range 4 {
						out[c] -= mout[c]
					}
				case minsRow:
					tile(u.q2, u.d2, qx[i*k:], k, dx[i*nb:], nb, &mout)
					for c := range 4 {
						out[c] -= mout[c]
					}
				}
				for c := range 4 {
					dst[(i+c)*m+j] = out[c]
				}
			}
			for ; i < i1; i++ {
				dst[i*m+j] = t.one(raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
			}
		}
	}
}

// spread8[b]: bit e of b as byte e (0 or 1).
var spread8 = func() (t [256]uint64) {
	for b := range 256 {
		for e := range 8 {
			t[b] |= uint64(b>>e&1) << (8 * e)
		}
	}
	return t
}()

const (
	ones8  = 0x0101010101010101
	low4x8 = 0x0f0f0f0f0f0f0f0f
	low2x8 = 0x0303030303030303
)

// putScales sets block b's 16 int16 scales: lo for values 0…15, hi for
// 16…31.
func putScales(q []byte, b int, lo, hi int16) {
	s := q[64*b+32 : 64*b+64]
	l, h := uint64(uint16(lo))*0x0001000100010001, uint64(uint16(hi))*0x0001000100010001
	binary.LittleEndian.PutUint64(s, l)
	binary.LittleEndian.PutUint64(s[8:], l)
	binary.LittleEndian.PutUint64(s[16:], h)
	binary.LittleEndian.PutUint64(s[24:], h)
}

// nibbles8 returns the low nibbles (hi false) or high nibbles of the
// eight bytes at p as eight bytes.
func nibbles8(p []byte, hi bool) uint64 {
	v := binary.LittleEndian.Uint64(p)
	if hi {
		v >>= 4
	}
	return v & low4x8
}

func unpackIQ4_NL(w []byte, u *unpackedRow) {
	for b := range len(w) / 18 {
		blk, q := w[b*18:b*18+18], u.q[64*b:64*b+32]
		for i := range 16 {
			q[i], q[16+i] = byte(kvaluesIQ4[blk[2+i]&15]), byte(kvaluesIQ4[blk[2+i]>>4])
		}
		putScales(u.q, b, 1, 1)
		u.d[b] = f16at(blk)
	}
}

func unpackIQ4_XS(w []byte, u *unpackedRow) {
	for sb := range len(w) / 136 {
		blk := w[sb*136 : sb*136+136]
		d := f16at(blk)
		for j := range 8 {
			b := sb*8 + j
			qs, q := blk[8+16*j:8+16*j+16], u.q[64*b:64*b+32]
			for i := range 16 {
				q[i], q[16+i] = byte(kvaluesIQ4[qs[i]&15]), byte(kvaluesIQ4[qs[i]>>4])
			}
			sc := int16(iq4xsScale(blk, j))
			putScales(u.q, b, sc, sc)
			u.d[b] = d
		}
	}
}

// put5 writes the 32 values of a Q5_0/Q5_1 block (nibbles at qs, 5th
// bits qh) into q, less 16 (signed) when signed.
func put5(q, qs []byte, qh uint32, signed bool) {
	for h := range 2 { // low nibbles (values 0…15), high (16…31)
		for e := 0; e < 16; e += 8 {
			v := nibbles8(qs[e:], h == 1)
			bits := spread8[byte(qh>>(16*h+e))]
			if signed { // v − 16: the nibble, with 0xf0 where the 5th bit is clear
				v |= (bits ^ ones8) * 0xf0
			} else {
				v |= bits << 4
			}
			binary.LittleEndian.PutUint64(q[16*h+e:], v)
		}
	}
}

func unpackQ5_0(w []byte, u *unpackedRow) {
	for b := range len(w) / 22 {
		blk := w[b*22 : b*22+22]
		put5(u.q[64*b:], blk[6:22], binary.LittleEndian.Uint32(blk[2:]), true)
		putScales(u.q, b, 1, 1)
		u.d[b] = f16at(blk)
	}
}

func unpackQ5_1(w []byte, u *unpackedRow) {
	for b := range len(w) / 24 {
		blk := w[b*24 : b*24+24]
		put5(u.q[64*b:], blk[8:24], binary.LittleEndian.Uint32(blk[4:]), false)
		putScales(u.q, b, 1, 1)
		u.d[b], u.m[b] = f16at(blk), f16at(blk[2:])
	}
}

func unpackQ5_K(w []byte, u *unpackedRow) {
	for sb := range len(w) / 176 {
		blk := w[sb*176 : sb*176+176]
		d := f16at(blk)
		sc, m := scalesK4(blk[4:16])
		qh := blk[16:48]
		for s := range 8 {
			b := sb*8 + s
			qs := blk[48+32*(s/2):]
			for e := 0; e < 32; e += 8 {
				v := nibbles8(qs[e:], s%2 == 1) | (binary.LittleEndian.Uint64(qh[e:])>>s&ones8)<<4
				binary.LittleEndian.PutUint64(u.q[64*b+e:], v)
			}
			putScales(u.q, b, int16(sc[s]), int16(sc[s]))
			u.d[b], u.m[b] = d, float32(m[s])
		}
		u.dm[sb] = f16at(blk[2:])
	}
}

func unpackQ3_K(w []byte, u *unpackedRow) {
	for sb := range len(w) / 110 {
		blk := w[sb*110 : sb*110+110]
		hmask, qs, sbs := blk[:32], blk[32:96], blk[96:108]
		d := f16at(blk[108:])
		for g := range 8 {
			b, h, c := sb*8+g, g/4, g%4
			for e := 0; e < 32; e += 8 {
				v := binary.LittleEndian.Uint64(qs[32*h+e:]) >> (2 * c) & low2x8
				hb := binary.LittleEndian.Uint64(hmask[e:]) >> g & ones8
				v |= (hb ^ ones8) * 0xfc // q − 4 where the high bit is clear
				binary.LittleEndian.PutUint64(u.q[64*b+e:], v)
			}
			var sc [2]int16
			for half := range 2 {
				i := 2*g + half
				sc[half] = int16(sbs[i%8]>>(4*(i/8))&15|(sbs[8+i%4]>>(2*(i/4))&3)<<4) - 32
			}
			putScales(u.q, b, sc[0], sc[1])
			u.d[b] = d
		}
	}
}

func unpackQ2_K(w []byte, u *unpackedRow) {
	for sb := range len(w) / 84 {
		blk := w[sb*84 : sb*84+84]
		scales, qs := blk[:16], blk[16:80]
		d, dmin := f16at(blk[80:]), f16at(blk[82:])
		for g := range 8 {
			b, h, c := sb*8+g, g/4, g%4
			for e := 0; e < 32; e += 8 {
				v := binary.LittleEndian.Uint64(qs[32*h+e:]) >> (2 * c) & low2x8
				binary.LittleEndian.PutUint64(u.q[64*b+e:], v)
				binary.LittleEndian.PutUint64(u.q2[64*b+e:], ones8)
			}
			lo, hi := scales[2*g], scales[2*g+1]
			putScales(u.q, b, int16(lo&15), int16(hi&15))
			putScales(u.q2, b, int16(lo>>4), int16(hi>>4))
			u.d[b], u.d2[b] = d, dmin
		}
	}
}

func unpackQ6_K(w []byte, u *unpackedRow) {
	for sb := range len(w) / 210 {
		blk := w[sb*210 : sb*210+210]
		d := f16at(blk[208:])
		for g := range 8 {
			b, h, c := sb*8+g, g/4, g%4
			ql, qh := blk[64*h+32*(c&1):], blk[128+32*h:]
			for e := 0; e < 32; e += 8 {
				v := nibbles8(ql[e:], c >= 2)
				hi := binary.LittleEndian.Uint64(qh[e:]) >> (2 * c)
				v |= (hi & ones8) << 4            // bit 4
				v |= (hi>>1&ones8 ^ ones8) * 0xe0 // q − 32 where bit 5 is clear
				binary.LittleEndian.PutUint64(u.q[64*b+e:], v)
			}
			putScales(u.q, b, int16(int8(blk[192+2*g])), int16(int8(blk[192+2*g+1])))
			u.d[b] = d
		}
	}
}
