package synth

import (
	"math/rand/v2"

	"github.com/vkllm/vkllm/tensor"
)

// randomBlocks fill whole blocks of the dtypes that have no Go quantiser
// with random sub-block scales and values under a fixed block scale,
// chosen so that the weights are of order 0.02 (standard deviation 0.006
// to 0.03, at most about 0.07 in magnitude), as the other dtypes' noise.
// The layouts are tensor's (quant_k.go).
var randomBlocks = map[tensor.DType]func(*rand.Rand, []byte){
	tensor.Q2_K:   randomQ2K,
	tensor.Q3_K:   randomQ3K,
	tensor.Q4_K:   randomQ4K,
	tensor.Q5_K:   randomQ5K,
	tensor.Q6_K:   randomQ6K,
	tensor.IQ4_NL: randomIQ4NL,
	tensor.IQ4_XS: randomIQ4XS,
}

// eachBlock calls fill on each whole block of size bytes in dst.
func eachBlock(dst []byte, size int, fill func(blk []byte)) {
	for b := 0; b+size <= len(dst); b += size {
		fill(dst[b : b+size])
	}
}

// randomQ2K: scales [16]u8 | qs [64]u8 | d f16 | dmin f16, every scale and
// min nibble and 2-bit value random; d = 0.02/14 and dmin = 1.5·d, so that
// the mean of (d·scale)·q − dmin·min is 0 and its deviation 0.02.
func randomQ2K(r *rand.Rand, dst []byte) {
	d, dmin := f16(0.02/14), f16(1.5*0.02/14)
	eachBlock(dst, 84, func(blk []byte) {
		randomBytes(r, blk[:80])
		copy(blk[80:82], d[:])
		copy(blk[82:84], dmin[:])
	})
}

// randomQ3K: hmask [32]u8 | qs [64]u8 | scales [12]u8 | d f16, every
// 3-bit value in [-4, 3] and 6-bit scale in [-32, 31] random; d = 0.02/43
// (their product's deviation is about 43).
func randomQ3K(r *rand.Rand, dst []byte) {
	d := f16(0.02 / 43)
	eachBlock(dst, 110, func(blk []byte) {
		randomBytes(r, blk[:108])
		copy(blk[108:110], d[:])
	})
}

// randomQ4K: d f16 | dmin f16 | scales [12]u8 | qs [128]u8, random 6-bit
// scales and mins and 4-bit values under d = 0.02/256 and dmin = 7.5·d,
// so that the mean of (d·scale)·q − dmin·min is 0.
func randomQ4K(r *rand.Rand, dst []byte) {
	d, dmin := f16(0.02/256), f16(7.5*0.02/256)
	eachBlock(dst, 144, func(blk []byte) {
		randomBytes(r, blk[4:])
		copy(blk[0:2], d[:])
		copy(blk[2:4], dmin[:])
	})
}

// randomQ5K: d f16 | dmin f16 | scales [12]u8 | qh [32]u8 | qs [128]u8,
// random 6-bit scales and mins and 5-bit values under d = 0.02/512 and
// dmin = 15.5·d, so that the weights' mean is 0.
func randomQ5K(r *rand.Rand, dst []byte) {
	d, dmin := f16(0.02/512), f16(15.5*0.02/512)
	eachBlock(dst, 176, func(blk []byte) {
		randomBytes(r, blk[4:])
		copy(blk[0:2], d[:])
		copy(blk[2:4], dmin[:])
	})
}

// randomQ6K: ql [128]u8 | qh [64]u8 | scales [16]i8 | d f16, random 6-bit
// values and scales in [-16, 15] under d = 0.02/256.
func randomQ6K(r *rand.Rand, dst []byte) {
	d := f16(0.02 / 256)
	eachBlock(dst, 210, func(blk []byte) {
		randomBytes(r, blk[:208])
		for i := 192; i < 208; i++ {
			blk[i] = byte(int8(blk[i]&31) - 16)
		}
		copy(blk[208:210], d[:])
	})
}

// randomIQ4NL: d f16 | qs [16]u8, random 4-bit indices into the IQ4
// levels (±127, deviation about 67) under d = 0.02/67.
func randomIQ4NL(r *rand.Rand, dst []byte) {
	d := f16(0.02 / 67)
	eachBlock(dst, 18, func(blk []byte) {
		copy(blk[0:2], d[:])
		randomBytes(r, blk[2:])
	})
}

// randomIQ4XS: d f16 | scales_h u16 | scales_l [4]u8 | qs [128]u8, random
// 6-bit sub-block scales in [-32, 31] and 4-bit indices under
// d = 0.02/1250 (scale times level has a deviation of about 1250; d is
// an f16 subnormal, which both readers convert exactly).
func randomIQ4XS(r *rand.Rand, dst []byte) {
	d := f16(0.02 / 1250)
	eachBlock(dst, 136, func(blk []byte) {
		copy(blk[0:2], d[:])
		randomBytes(r, blk[2:])
	})
}

func randomBytes(r *rand.Rand, dst []byte) {
	for i := 0; i < len(dst); i += 8 {
		u := r.Uint64()
		for k := range min(8, len(dst)-i) {
			dst[i+k] = byte(u >> (8 * k))
		}
	}
}

// f16 is x as IEEE half-precision bytes.
func f16(x float32) [2]byte {
	var b [2]byte
	_ = tensor.Quantize(tensor.F16, []float32{x}, b[:])
	return b
}
