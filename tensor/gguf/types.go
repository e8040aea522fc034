package gguf

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

// ValueType is the type of a metadata value.
type ValueType uint32

const (
	Uint8 ValueType = iota
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Float32
	Bool
	String
	ArrayType
	Uint64
	Int64
	Float64
	numValueTypes
)

var valueTypeNames = [...]string{"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"}

func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// size is the encoded size of a scalar of type t (0 for STRING and ARRAY).
func (t ValueType) size() int {
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

// Value is a metadata value. Scalars hold the Go type of their ValueType
// (uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64); ARRAY holds an Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is a metadata array: V is a typed slice ([]uint8 … []float64,
// []bool, []string) or, for nested arrays, []Array.
type Array struct {
	Elem ValueType
	V    any
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo is a tensor's entry as stored: ne innermost first.
type TensorInfo struct {
	Name   string
	NE     []int64
	Type   uint32 // ggml type id
	Offset uint64 // relative to the data section
}

// ggml type ids of the types vkllm knows (ggml.h). Ids of ggml types vkllm
// does not support (the IQ and TQ families, MXFP4) map to nothing.
var ggmlTypes = map[uint32]tensor.DType{
	0: tensor.F32, 1: tensor.F16, 2: tensor.Q4_0, 3: tensor.Q4_1, 6: tensor.Q5_0, 7: tensor.Q5_1,
	8: tensor.Q8_0, 9: tensor.Q8_1, 10: tensor.Q2_K, 11: tensor.Q3_K, 12: tensor.Q4_K, 13: tensor.Q5_K,
	14: tensor.Q6_K, 15: tensor.Q8_K, 24: tensor.I8, 25: tensor.I16, 26: tensor.I32, 27: tensor.I64,
	28: tensor.F64, 30: tensor.BF16,
}

// TypeOf returns the DType of a ggml type id.
func TypeOf(id uint32) (tensor.DType, bool) {
	dt, ok := ggmlTypes[id]
	return dt, ok
}

// TypeID returns the ggml type id of a DType.
func TypeID(dt tensor.DType) (uint32, bool) {
	for id, d := range ggmlTypes {
		if d == dt {
			return id, true
		}
	}
	return 0, false
}

// VersionError: the file is GGUF of a version this reader does not speak.
type VersionError struct {
	Path    string
	Version uint32
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("gguf %s: version %d is not supported (2 and 3 are)", e.Path, e.Version)
}

// Code implements errcode.Coder.
func (e *VersionError) Code() errcode.Code { return errcode.ABIMismatch }
