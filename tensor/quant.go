package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Conversions between the stored element types and float32.
//
// Plain types (F32, F16, BF16, F64) are little-endian arrays. Block types
// follow ggml's layouts (ggml-common.h): a row of n elements is n/BlockSize
// blocks of BlockBytes bytes each, blocks in element order, each block a
// little-endian struct. The per-block layouts are documented on the
// dequant<Type> functions (quant_blocks.go, quant_k.go).
//
// Results equal the Python gguf package's (gguf.quants, version 0.19.0) bit
// for bit; testdata/quant holds vectors made by tools/make_quant_vectors.py.
// To match numpy, every product is rounded to float32 on its own (the
// explicit float32 conversions forbid fused multiply-adds) and in numpy's
// order.

// ErrBufferSize is wrapped by Dequantize and Quantize when a buffer's length
// does not match the element count.
var ErrBufferSize = errors.New("tensor: buffer size does not match element count")

// Dequantize converts len(dst) elements of type dt stored in src to float32.
// src must hold exactly dt.Bytes(len(dst)) bytes, so len(dst) must be a
// whole number of blocks. It supports F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL and IQ4_XS;
// other types give *UnsupportedDTypeError. It does not allocate (except for
// an error), so the CPU backend can call it per row.
//
// Values equal gguf.quants.dequantize (0.19.0) bit for bit. gguf lacks F64,
// Q8_1 and Q8_K; for those the value is ggml's definition (F64 rounded to
// nearest float32; d·q for Q8_1 and Q8_K).
func Dequantize(dt DType, src []byte, dst []float32) error {
	var block func(b []byte, y []float32)
	switch dt {
	case F32, F16, BF16, F64:
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
	case IQ4_NL:
		block = dequantIQ4_NL
	case IQ4_XS:
		block = dequantIQ4_XS
	default:
		return &UnsupportedDTypeError{Format: "dequantize", DType: dt.String()}
	}
	if err := checkSize("dequantize", dt, len(dst), len(src)); err != nil {
		return err
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = half(src[2*i:])
		}
	case BF16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	default:
		bs, bb := dt.BlockSize(), dt.BlockBytes()
		for len(dst) > 0 {
			block(src[:bb], dst[:bs])
			src, dst = src[bb:], dst[bs:]
		}
	}
	return nil
}

// Quantize converts len(src) float32 values to dt, written to dst, which
// must hold exactly dt.Bytes(len(src)) bytes. It supports F32, F16, BF16,
// Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1; other types give *UnsupportedDTypeError.
//
// The bytes equal gguf.quants.quantize (0.19.0) for every NaN-free input,
// including its rounding: F16 and BF16 round to nearest even; Q8_0 rounds
// half away from zero (gguf's np_roundf, as ggml's roundf); Q4_x and Q5_x
// truncate x/d + offset + 0.5. Where gguf's intermediates overflow (blocks
// of float32 subnormals, where 1/d is +Inf), the integer conversion follows
// numpy on x86-64 (see truncByte). One case is left open: when a Q4_1/Q5_1
// block's minimum (or maximum) is zero and the block holds both +0 and −0,
// numpy's SIMD reduction picks either sign; Quantize takes −0 for the
// minimum and +0 for the maximum.
func Quantize(dt DType, src []float32, dst []byte) error {
	var block func(x []float32, b []byte)
	switch dt {
	case F32, F16, BF16:
	case Q8_0:
		block = quantQ8_0
	case Q4_0:
		block = quantQ4_0
	case Q4_1:
		block = quantQ4_1
	case Q5_0:
		block = quantQ5_0
	case Q5_1:
		block = quantQ5_1
	default:
		return &UnsupportedDTypeError{Format: "quantize", DType: dt.String()}
	}
	if err := checkSize("quantize", dt, len(src), len(dst)); err != nil {
		return err
	}
	switch dt {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			putHalf(dst[2*i:], v)
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], toBF16(v))
		}
	default:
		bs, bb := dt.BlockSize(), dt.BlockBytes()
		for len(src) > 0 {
			block(src[:bs], dst[:bb])
			src, dst = src[bs:], dst[bb:]
		}
	}
	return nil
}

// checkSize reports whether nbytes is exactly the size of n elements of dt.
func checkSize(op string, dt DType, n, nbytes int) error {
	want, err := dt.Bytes(int64(n))
	if err != nil {
		return fmt.Errorf("tensor: %s %v: %w: %w", op, dt, ErrBufferSize, err)
	}
	if int64(nbytes) != want {
		return fmt.Errorf("tensor: %s %v: %d bytes for %d elements, want %d: %w", op, dt, nbytes, n, want, ErrBufferSize)
	}
	return nil
}

// half reads a little-endian IEEE binary16 (exact in float32).
func half(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// putHalf writes v rounded to the nearest binary16 (ties to even; overflow
// to ±Inf), as numpy's astype(float16).
func putHalf(b []byte, v float32) {
	binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits())
}

// toBF16 rounds to nearest even and quiets NaNs, as ggml's
// ggml_compute_fp32_to_bf16 and gguf's BF16.quantize_blocks.
func toBF16(v float32) uint16 {
	n := math.Float32bits(v)
	if n&0x7fffffff > 0x7f800000 {
		return uint16((n&0xffff0000 | 64<<16) >> 16)
	}
	return uint16((uint64(n) + uint64(0x7fff+((n>>16)&1))) >> 16)
}

// mad and msub round the product to float32 before adding (numpy never
// fuses a multiply-add; Go may, unless told by the conversion).
func mad(a, b, c float32) float32  { return float32(a*b) + c }
func msub(a, b, c float32) float32 { return float32(a*b) - c }

// Dequantizable reports whether Dequantize knows dt (a valid dtype with
// blocks, one of the list above).
func Dequantizable(dt DType) bool {
	bs, bb := dt.BlockSize(), dt.BlockBytes()
	if !dt.Valid() || bs <= 0 || bb <= 0 {
		return false
	}
	return Dequantize(dt, make([]byte, bb), make([]float32, bs)) == nil
}
