package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tensor"
)

// WriteOptions configure Write.
type WriteOptions struct {
	Version uint32 // 2 or 3; 0 means 3
}

// ErrInvalid is wrapped by Write's errors for input GGUF cannot hold or
// that Parse would refuse (a value whose Go type does not match its
// ValueType, a duplicate key or tensor name, a bad shape, …).
var ErrInvalid = errors.New("gguf: invalid input to Write")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Write writes a GGUF file: the header, kv in the order given, the tensor
// infos and data in the order given. Tensor data are aligned to
// general.alignment if kv has it (an integer power of two), else 32, and
// each is padded with zeros to the alignment, as gguf-py and ggml write
// them (gguf-py also pads a file without tensors; Write ends it after the
// metadata). Shapes are row-major and stored reversed as ne. Everything is
// checked before the first byte is written; the checks match Parse's, so
// what Write writes Parse reads back.
func Write(w io.Writer, kv []KV, tensors []tensor.Tensor, opts *WriteOptions) error {
	version := uint32(3)
	if opts != nil && opts.Version != 0 {
		version = opts.Version
	}
	if version != 2 && version != 3 {
		return &VersionError{Version: version}
	}
	le := binary.LittleEndian
	b := le.AppendUint32([]byte(Magic), version)
	b = le.AppendUint64(b, uint64(len(tensors)))
	b = le.AppendUint64(b, uint64(len(kv)))

	align := uint64(DefaultAlignment)
	seen := make(map[string]bool, len(kv))
	for _, e := range kv {
		if !utf8.ValidString(e.Key) {
			return invalid("key %q is not valid UTF-8", e.Key)
		}
		if seen[e.Key] {
			return invalid("duplicate key %q", e.Key)
		}
		seen[e.Key] = true
		b = appendString(b, e.Key)
		b = le.AppendUint32(b, uint32(e.Value.Type))
		var err error
		if b, err = appendValue(b, e.Value); err != nil {
			return fmt.Errorf("%w: key %q: %s", ErrInvalid, e.Key, err)
		}
		if e.Key == "general.alignment" {
			a, ok := asInt(e.Value)
			if !ok || a <= 0 || a > MaxAlignment || a&(a-1) != 0 {
				return invalid("general.alignment %v is not an integer power of two in [1, %d]", e.Value.V, MaxAlignment)
			}
			align = uint64(a)
		}
	}

	offsets := make([]uint64, len(tensors))
	var off uint64
	names := make(map[string]bool, len(tensors))
	for i, t := range tensors {
		id, err := checkTensor(t)
		if err != nil {
			return err
		}
		if names[t.Name] {
			return invalid("duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		b = appendString(b, t.Name)
		b = le.AppendUint32(b, uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- { // ne: innermost first
			b = le.AppendUint64(b, uint64(t.Shape[j]))
		}
		b = le.AppendUint32(b, id)
		offsets[i] = off
		b = le.AppendUint64(b, off)
		off = padded(off+uint64(len(t.Data)), align)
	}
	if len(tensors) > 0 { // a file of metadata only ends after it, unpadded
		b = append(b, make([]byte, padded(uint64(len(b)), align)-uint64(len(b)))...)
	}

	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(b); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	for i, t := range tensors {
		if _, err := bw.Write(t.Data); err != nil {
			return fmt.Errorf("gguf: write: %w", err)
		}
		end := offsets[i] + uint64(len(t.Data))
		if err := writeZeros(bw, padded(end, align)-end); err != nil {
			return fmt.Errorf("gguf: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

func padded(n, align uint64) uint64 { return (n + align - 1) / align * align }

var zeros [4096]byte

func writeZeros(w io.Writer, n uint64) error {
	for n > 0 {
		k := min(n, uint64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// checkTensor checks a tensor as Parse would and returns its ggml type id.
func checkTensor(t tensor.Tensor) (uint32, error) {
	id, ok := TypeID(t.DType)
	if !ok {
		return 0, &tensor.UnsupportedDTypeError{Format: "gguf", DType: t.DType.String(), Tensor: t.Name}
	}
	if len(t.Shape) > MaxDims {
		return 0, invalid("tensor %q: %d dimensions, at most %d", t.Name, len(t.Shape), MaxDims)
	}
	for _, d := range t.Shape {
		if d < 1 {
			return 0, invalid("tensor %q: shape %v has a dimension below 1", t.Name, t.Shape)
		}
	}
	n, err := tensor.NumElements(t.Shape)
	if err != nil {
		return 0, invalid("tensor %q: %v", t.Name, err)
	}
	if bs := int64(t.DType.BlockSize()); len(t.Shape) > 0 && t.Shape[len(t.Shape)-1]%bs != 0 {
		return 0, invalid("tensor %q: a row of %d elements is not a whole number of %v blocks of %d", t.Name, t.Shape[len(t.Shape)-1], t.DType, bs)
	}
	size, err := t.DType.Bytes(n)
	if err != nil {
		return 0, invalid("tensor %q: %v", t.Name, err)
	}
	if size != int64(len(t.Data)) {
		return 0, invalid("tensor %q: %d bytes of data for shape %v of %v, want %d", t.Name, len(t.Data), t.Shape, t.DType, size)
	}
	return id, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendValue appends v's encoding (without its type) after checking that
// its Go type matches its ValueType.
func appendValue(b []byte, v Value) ([]byte, error) {
	if v.Type == ArrayType {
		a, ok := v.V.(Array)
		if !ok {
			return nil, fmt.Errorf("ARRAY value holds %T, want Array", v.V)
		}
		return appendArray(b, a, 1)
	}
	if t, ok := scalarType(v.V); !ok || t != v.Type {
		return nil, fmt.Errorf("%v value holds %T", v.Type, v.V)
	}
	le := binary.LittleEndian
	switch x := v.V.(type) {
	case uint8:
		return append(b, x), nil
	case int8:
		return append(b, uint8(x)), nil
	case bool:
		return appendBool(b, x), nil
	case uint16:
		return le.AppendUint16(b, x), nil
	case int16:
		return le.AppendUint16(b, uint16(x)), nil
	case uint32:
		return le.AppendUint32(b, x), nil
	case int32:
		return le.AppendUint32(b, uint32(x)), nil
	case float32:
		return le.AppendUint32(b, math.Float32bits(x)), nil
	case uint64:
		return le.AppendUint64(b, x), nil
	case int64:
		return le.AppendUint64(b, uint64(x)), nil
	case float64:
		return le.AppendUint64(b, math.Float64bits(x)), nil
	case string:
		return appendString(b, x), nil
	}
	return nil, fmt.Errorf("%v value holds %T", v.Type, v.V) // unreachable: scalarType matched
}

// scalarType is the ValueType of a scalar Go value.
func scalarType(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return Uint8, true
	case int8:
		return Int8, true
	case uint16:
		return Uint16, true
	case int16:
		return Int16, true
	case uint32:
		return Uint32, true
	case int32:
		return Int32, true
	case float32:
		return Float32, true
	case bool:
		return Bool, true
	case string:
		return String, true
	case uint64:
		return Uint64, true
	case int64:
		return Int64, true
	case float64:
		return Float64, true
	}
	return 0, false
}

// appendArray appends an array (element type, count, elements) at nesting
// depth depth after checking that its slice matches Elem.
func appendArray(b []byte, a Array, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d", MaxDepth)
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(a.Elem))
	put := func(n int, elem ValueType, each func(i int)) error {
		if elem != a.Elem {
			return fmt.Errorf("array of %v holds %T", a.Elem, a.V)
		}
		b = le.AppendUint64(b, uint64(n))
		for i := range n {
			each(i)
		}
		return nil
	}
	var err error
	switch v := a.V.(type) {
	case []uint8:
		err = put(len(v), Uint8, func(i int) { b = append(b, v[i]) })
	case []int8:
		err = put(len(v), Int8, func(i int) { b = append(b, uint8(v[i])) })
	case []bool:
		err = put(len(v), Bool, func(i int) { b = appendBool(b, v[i]) })
	case []uint16:
		err = put(len(v), Uint16, func(i int) { b = le.AppendUint16(b, v[i]) })
	case []int16:
		err = put(len(v), Int16, func(i int) { b = le.AppendUint16(b, uint16(v[i])) })
	case []uint32:
		err = put(len(v), Uint32, func(i int) { b = le.AppendUint32(b, v[i]) })
	case []int32:
		err = put(len(v), Int32, func(i int) { b = le.AppendUint32(b, uint32(v[i])) })
	case []float32:
		err = put(len(v), Float32, func(i int) { b = le.AppendUint32(b, math.Float32bits(v[i])) })
	case []uint64:
		err = put(len(v), Uint64, func(i int) { b = le.AppendUint64(b, v[i]) })
	case []int64:
		err = put(len(v), Int64, func(i int) { b = le.AppendUint64(b, uint64(v[i])) })
	case []float64:
		err = put(len(v), Float64, func(i int) { b = le.AppendUint64(b, math.Float64bits(v[i])) })
	case []string:
		err = put(len(v), String, func(i int) { b = appendString(b, v[i]) })
	case []Array:
		if a.Elem != ArrayType {
			return nil, fmt.Errorf("array of %v holds %T", a.Elem, a.V)
		}
		b = le.AppendUint64(b, uint64(len(v)))
		for _, sub := range v {
			if b, err = appendArray(b, sub, depth+1); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("array of %v holds %T, want a slice of that type", a.Elem, a.V)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}
