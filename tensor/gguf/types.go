package gguf

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

// ValueType is the type of a metadata value (gguf_type in ggml's gguf.h).
type ValueType uint32

// The metadata value types, numbered as in the file.
const (
	Uint8     ValueType = iota // UINT8 = 0
	Int8                       // INT8
	Uint16                     // UINT16
	Int16                      // INT16
	Uint32                     // UINT32
	Int32                      // INT32
	Float32                    // FLOAT32
	Bool                       // BOOL: one byte, 0 or 1
	String                     // STRING: uint64 length, then the bytes
	ArrayType                  // ARRAY = 9: uint32 element type, uint64 count, elements
	Uint64                     // UINT64 = 10
	Int64                      // INT64
	Float64                    // FLOAT64 = 12
	numValueTypes
)

var valueTypeNames = [numValueTypes]string{"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"}

// String returns the type's name as gguf.h spells it ("UINT8", "ARRAY", …).
func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// ParseValueType returns the ValueType named s (as String writes it).
func ParseValueType(s string) (ValueType, bool) {
	for i, n := range valueTypeNames {
		if n == s {
			return ValueType(i), true
		}
	}
	return 0, false
}

// size is the encoded size of a scalar of type t (0 for STRING and ARRAY).
func (t ValueType) size() int64 {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one value of type t can take in a file: its
// scalar size, 8 for a STRING (the length) and 12 for an ARRAY (element type
// and count).
func (t ValueType) minSize() int64 {
	switch t {
	case String:
		return 8
	case ArrayType:
		return 12
	}
	return t.size()
}

// Value is a metadata value. Scalars hold the Go type of their ValueType
// (uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64); ARRAY holds an Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is a metadata array: V is a typed slice matching Elem ([]uint8 …
// []float64, []bool, []string) or, for nested arrays (Elem ArrayType),
// []Array. Parse never returns a nil slice.
type Array struct {
	Elem ValueType
	V    any
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo is a tensor's entry as stored in the file.
type TensorInfo struct {
	Name   string
	NE     []int64 // dimensions innermost first: NE[0] is the row length
	Type   uint32  // ggml type id
	Offset uint64  // of the data, relative to File.DataOffset
}

// ggmlTypes maps the ggml type ids vkllm reads to its DTypes (ggml.h, and
// GGMLQuantizationType in gguf-py 0.19.0).
var ggmlTypes = map[uint32]tensor.DType{
	0: tensor.F32, 1: tensor.F16, 2: tensor.Q4_0, 3: tensor.Q4_1, 6: tensor.Q5_0, 7: tensor.Q5_1,
	8: tensor.Q8_0, 9: tensor.Q8_1, 10: tensor.Q2_K, 11: tensor.Q3_K, 12: tensor.Q4_K, 13: tensor.Q5_K,
	14: tensor.Q6_K, 15: tensor.Q8_K, 24: tensor.I8, 25: tensor.I16, 26: tensor.I32, 27: tensor.I64,
	20: tensor.IQ4_NL, 23: tensor.IQ4_XS, 28: tensor.F64, 30: tensor.BF16,
}

// otherGGMLTypes names the ggml types that exist but vkllm does not read, so
// an error can say which one a file uses.
var otherGGMLTypes = map[uint32]string{
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 21: "IQ3_S", 22: "IQ2_S",
	29: "IQ1_M", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0",
}

// TypeOf returns the DType of a ggml type id; false for ids vkllm does not
// read (unknown ids and types such as IQ2_XXS).
func TypeOf(id uint32) (tensor.DType, bool) {
	dt, ok := ggmlTypes[id]
	return dt, ok
}

// TypeID returns the ggml type id of a DType; false for DTypes GGUF cannot
// hold (U8, Bool).
func TypeID(dt tensor.DType) (uint32, bool) {
	for id, d := range ggmlTypes {
		if d == dt {
			return id, true
		}
	}
	return 0, false
}

// typeName names a ggml type id for messages: "Q4_K", "IQ2_XXS (ggml type
// 16)", "ggml type 99 (unknown)".
func typeName(id uint32) string {
	if dt, ok := ggmlTypes[id]; ok {
		return dt.String()
	}
	if n, ok := otherGGMLTypes[id]; ok {
		return fmt.Sprintf("%s (ggml type %d)", n, id)
	}
	return fmt.Sprintf("ggml type %d (unknown)", id)
}

// VersionError reports a GGUF file of a version this package does not
// speak (it reads and writes 2 and 3). Its code is ABI_MISMATCH.
type VersionError struct {
	Path      string // file path, if known
	Version   uint32 // the version field as read little-endian
	BigEndian bool   // the field reads as 2 or 3 byte-swapped: a big-endian file
}

func (e *VersionError) Error() string {
	where := "gguf"
	if e.Path != "" {
		where += " " + e.Path
	}
	if e.BigEndian {
		return fmt.Sprintf("%s: big-endian GGUF files are not supported (only little-endian versions 2 and 3 are)", where)
	}
	return fmt.Sprintf("%s: version %d is not supported (2 and 3 are)", where, e.Version)
}

// Code implements errcode.Coder.
func (e *VersionError) Code() errcode.Code { return errcode.ABIMismatch }
