package tensor

import (
	"fmt"
	"math/bits"
)

// DType is an element type: a plain number type or a ggml block quantisation.
type DType uint8

// The element types vkllm knows. The zero value is Invalid.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	F64
	I8
	I16
	I32
	I64
	U8
	Bool
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q8_1
	Q2_K
	Q3_K
	Q4_K
	Q5_K
	Q6_K
	Q8_K
	IQ4_NL
	IQ4_XS
	numDTypes
)

type dtypeInfo struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
	quantized  bool
}

var dtypes = [numDTypes]dtypeInfo{
	Invalid: {"invalid", 0, 0, false},
	F32:     {"F32", 1, 4, false},
	F16:     {"F16", 1, 2, false},
	BF16:    {"BF16", 1, 2, false},
	F64:     {"F64", 1, 8, false},
	I8:      {"I8", 1, 1, false},
	I16:     {"I16", 1, 2, false},
	I32:     {"I32", 1, 4, false},
	I64:     {"I64", 1, 8, false},
	U8:      {"U8", 1, 1, false},
	Bool:    {"BOOL", 1, 1, false},
	Q4_0:    {"Q4_0", 32, 2 + 16, true},
	Q4_1:    {"Q4_1", 32, 2 + 2 + 16, true},
	Q5_0:    {"Q5_0", 32, 2 + 4 + 16, true},
	Q5_1:    {"Q5_1", 32, 2 + 2 + 4 + 16, true},
	Q8_0:    {"Q8_0", 32, 2 + 32, true},
	Q8_1:    {"Q8_1", 32, 2 + 2 + 32, true},
	Q2_K:    {"Q2_K", 256, 16 + 64 + 2 + 2, true},
	Q3_K:    {"Q3_K", 256, 32 + 64 + 12 + 2, true},
	Q4_K:    {"Q4_K", 256, 2 + 2 + 12 + 128, true},
	Q5_K:    {"Q5_K", 256, 2 + 2 + 12 + 32 + 128, true},
	Q6_K:    {"Q6_K", 256, 128 + 64 + 16 + 2, true},
	Q8_K:    {"Q8_K", 256, 4 + 256 + 16*2, true},
	IQ4_NL:  {"IQ4_NL", 32, 2 + 16, true},
	IQ4_XS:  {"IQ4_XS", 256, 2 + 2 + 4 + 128, true},
}

// Valid reports whether t is a known element type.
func (t DType) Valid() bool { return t > Invalid && t < numDTypes }

// String returns the type's canonical name ("F32", "Q4_K", …).
func (t DType) String() string {
	if t < numDTypes {
		return dtypes[t].name
	}
	return fmt.Sprintf("DType(%d)", uint8(t))
}

// BlockSize is the number of elements in one block (1 for plain types).
func (t DType) BlockSize() int {
	if t < numDTypes {
		return dtypes[t].blockSize
	}
	return 0
}

// BlockBytes is the size in bytes of one block.
func (t DType) BlockBytes() int {
	if t < numDTypes {
		return dtypes[t].blockBytes
	}
	return 0
}

// Quantized reports whether t is a ggml block quantisation.
func (t DType) Quantized() bool { return t < numDTypes && dtypes[t].quantized }

// ParseDType returns the DType named s (as String writes it).
func ParseDType(s string) (DType, bool) {
	for i := DType(1); i < numDTypes; i++ {
		if dtypes[i].name == s {
			return i, true
		}
	}
	return Invalid, false
}

// Bytes returns the size in bytes of n elements of type t. It fails if t is
// unknown, n is negative, n is not a whole number of blocks, or the size
// overflows int64.
func (t DType) Bytes(n int64) (int64, error) {
	if !t.Valid() {
		return 0, fmt.Errorf("tensor: unknown dtype %v", t)
	}
	if n < 0 {
		return 0, fmt.Errorf("tensor: negative element count %d", n)
	}
	bs := int64(t.BlockSize())
	if n%bs != 0 {
		return 0, fmt.Errorf("tensor: %d elements is not a whole number of %v blocks of %d", n, t, bs)
	}
	hi, lo := bits.Mul64(uint64(n/bs), uint64(t.BlockBytes()))
	if hi != 0 || lo > 1<<62 {
		return 0, fmt.Errorf("tensor: %d elements of %v overflow", n, t)
	}
	return int64(lo), nil
}

// NumElements returns the product of shape, failing on a negative dimension
// or on overflow (the product must stay below 2^62). An empty shape is a
// scalar: one element.
func NumElements(shape []int64) (int64, error) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor: negative dimension %d in shape %v", d, shape)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("tensor: shape %v overflows", shape)
		}
		n = lo
	}
	return int64(n), nil
}
