package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/vkllm/vkllm/tensor"
)

// WriteOptions configure Write.
type WriteOptions struct {
	Version uint32 // 2 or 3; 0 means 3
}

// Write writes a GGUF file: metadata in the order given, then tensor infos
// and data in the order given, each tensor aligned to general.alignment
// (from kv, else 32). Tensor shapes are row-major (reversed into ne).
func Write(w io.Writer, kv []KV, tensors []tensor.Tensor, opts *WriteOptions) error {
	version := uint32(3)
	if opts != nil && opts.Version != 0 {
		version = opts.Version
	}
	if version != 2 && version != 3 {
		return &VersionError{Version: version}
	}
	align := uint64(DefaultAlignment)
	for _, e := range kv {
		if e.Key == "general.alignment" {
			a, ok := asInt(e.Value)
			if !ok || a <= 0 || a&(a-1) != 0 {
				return fmt.Errorf("gguf: write: general.alignment %v is not a power of two", e.Value.V)
			}
			align = uint64(a)
		}
	}
	bw := bufio.NewWriter(w)
	cw := &countWriter{w: bw}
	le := binary.LittleEndian
	put := func(v any) { binary.Write(cw, le, v) }
	cw.Write([]byte(Magic))
	put(version)
	put(uint64(len(tensors)))
	put(uint64(len(kv)))
	for _, e := range kv {
		writeString(cw, e.Key)
		put(uint32(e.Value.Type))
		if err := writeValue(cw, e.Value); err != nil {
			return fmt.Errorf("gguf: write %q: %w", e.Key, err)
		}
	}
	var off uint64
	offsets := make([]uint64, len(tensors))
	for i, t := range tensors {
		id, ok := TypeID(t.DType)
		if !ok {
			return &tensor.UnsupportedDTypeError{Format: "gguf", DType: t.DType.String(), Tensor: t.Name}
		}
		n, err := tensor.NumElements(t.Shape)
		if err != nil {
			return err
		}
		if size, err := t.DType.Bytes(n); err != nil || size != int64(len(t.Data)) {
			return fmt.Errorf("gguf: write %q: %d bytes for shape %v of %v", t.Name, len(t.Data), t.Shape, t.DType)
		}
		if len(t.Shape) > MaxDims {
			return fmt.Errorf("gguf: write %q: %d dimensions", t.Name, len(t.Shape))
		}
		writeString(cw, t.Name)
		put(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			put(uint64(t.Shape[j]))
		}
		put(id)
		off = (off + align - 1) / align * align
		offsets[i] = off
		put(off)
		off += uint64(len(t.Data))
	}
	pad := func() {
		for cw.n%align != 0 {
			cw.Write([]byte{0})
		}
	}
	pad()
	start := cw.n
	for i, t := range tensors {
		for cw.n-start < offsets[i] {
			cw.Write([]byte{0})
		}
		cw.Write(t.Data)
	}
	if len(tensors) > 0 {
		pad()
	}
	if cw.err != nil {
		return cw.err
	}
	return bw.Flush()
}

type countWriter struct {
	w   io.Writer
	n   uint64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	c.err = err
	return n, err
}

func writeString(w io.Writer, s string) {
	binary.Write(w, binary.LittleEndian, uint64(len(s)))
	io.WriteString(w, s)
}

func writeValue(w io.Writer, v Value) error {
	le := binary.LittleEndian
	switch v.Type {
	case String:
		s, ok := v.V.(string)
		if !ok {
			return fmt.Errorf("STRING holds %T", v.V)
		}
		writeString(w, s)
		return nil
	case ArrayType:
		a, ok := v.V.(Array)
		if !ok {
			return fmt.Errorf("ARRAY holds %T", v.V)
		}
		return writeArray(w, a)
	case Bool:
		b, ok := v.V.(bool)
		if !ok {
			return fmt.Errorf("BOOL holds %T", v.V)
		}
		if b {
			w.Write([]byte{1})
		} else {
			w.Write([]byte{0})
		}
		return nil
	}
	if v.Type >= numValueTypes {
		return fmt.Errorf("unknown value type %d", v.Type)
	}
	if !scalarMatches(v) {
		return fmt.Errorf("%v holds %T", v.Type, v.V)
	}
	return binary.Write(w, le, v.V)
}

func scalarMatches(v Value) bool {
	switch v.V.(type) {
	case uint8:
		return v.Type == Uint8
	case int8:
		return v.Type == Int8
	case uint16:
		return v.Type == Uint16
	case int16:
		return v.Type == Int16
	case uint32:
		return v.Type == Uint32
	case int32:
		return v.Type == Int32
	case float32:
		return v.Type == Float32
	case uint64:
		return v.Type == Uint64
	case int64:
		return v.Type == Int64
	case float64:
		return v.Type == Float64
	}
	return false
}

func writeArray(w io.Writer, a Array) error {
	le := binary.LittleEndian
	binary.Write(w, le, uint32(a.Elem))
	switch v := a.V.(type) {
	case []string:
		binary.Write(w, le, uint64(len(v)))
		for _, s := range v {
			writeString(w, s)
		}
	case []Array:
		binary.Write(w, le, uint64(len(v)))
		for _, sub := range v {
			if err := writeArray(w, sub); err != nil {
				return err
			}
		}
	case []bool:
		binary.Write(w, le, uint64(len(v)))
		for _, b := range v {
			if b {
				w.Write([]byte{1})
			} else {
				w.Write([]byte{0})
			}
		}
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []uint64, []int64, []float64:
		n := sliceLen(v)
		binary.Write(w, le, uint64(n))
		return binary.Write(w, le, v)
	default:
		return fmt.Errorf("array holds %T", a.V)
	}
	return nil
}

func sliceLen(v any) int {
	switch s := v.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []float32:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float64:
		return len(s)
	}
	return 0
}
