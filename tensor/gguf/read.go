package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tensor"
)

// Magic is the first four bytes of a GGUF file.
const Magic = "GGUF"

// MaxDepth bounds the nesting of metadata arrays.
const MaxDepth = 8

// MaxDims is ggml's GGML_MAX_DIMS.
const MaxDims = 4

// DefaultAlignment is used when general.alignment is absent.
const DefaultAlignment = 32

// File is a parsed GGUF file.
type File struct {
	Version    uint32
	KV         []KV // in file order
	Alignment  int
	DataOffset int64 // start of the data section

	path    string
	infos   []TensorInfo
	tensors []tensor.Tensor
	byName  map[string]int
	byKey   map[string]int
	unmap   func() error
}

// reader is a bounds-checked cursor; the first error sticks.
type reader struct {
	data []byte
	off  int64
	path string
	err  error
}

func (r *reader) fail(off int64, format string, args ...any) {
	if r.err == nil {
		r.err = &tensor.CorruptError{Format: "gguf", Path: r.path, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
}

func (r *reader) left() int64 { return int64(len(r.data)) - r.off }

func (r *reader) bytes(n int64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.left() {
		r.fail(r.off, "%s of %d bytes runs past the end of the file (%d bytes left)", what, n, r.left())
		return nil
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8() uint8 {
	if b := r.bytes(1, "uint8"); b != nil {
		return b[0]
	}
	return 0
}
func (r *reader) u16() uint16 {
	if b := r.bytes(2, "uint16"); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}
func (r *reader) u32() uint32 {
	if b := r.bytes(4, "uint32"); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (r *reader) u64() uint64 {
	if b := r.bytes(8, "uint64"); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) str(what string) string {
	at := r.off
	n := r.u64()
	if r.err != nil {
		return ""
	}
	if n > uint64(r.left()) {
		r.fail(at, "%s: string length %d exceeds the %d bytes left", what, n, r.left())
		return ""
	}
	return string(r.bytes(int64(n), what))
}

// count reads an element count and checks that count × minSize bytes remain.
func (r *reader) count(what string, minSize int64) uint64 {
	at := r.off
	n := r.u64()
	if r.err != nil {
		return 0
	}
	hi, lo := bits.Mul64(n, uint64(minSize))
	if hi != 0 || lo > uint64(r.left()) {
		r.fail(at, "%s count %d needs at least %d bytes each, only %d bytes left", what, n, minSize, r.left())
		return 0
	}
	return n
}

func (r *reader) value(t ValueType, depth int, what string) Value {
	at := r.off
	switch t {
	case Uint8:
		return Value{t, r.u8()}
	case Int8:
		return Value{t, int8(r.u8())}
	case Uint16:
		return Value{t, r.u16()}
	case Int16:
		return Value{t, int16(r.u16())}
	case Uint32:
		return Value{t, r.u32()}
	case Int32:
		return Value{t, int32(r.u32())}
	case Float32:
		return Value{t, math.Float32frombits(r.u32())}
	case Uint64:
		return Value{t, r.u64()}
	case Int64:
		return Value{t, int64(r.u64())}
	case Float64:
		return Value{t, math.Float64frombits(r.u64())}
	case Bool:
		b := r.u8()
		if b > 1 {
			r.fail(at, "%s: bool byte %d is neither 0 nor 1", what, b)
		}
		return Value{t, b == 1}
	case String:
		return Value{t, r.str(what)}
	case ArrayType:
		if depth >= MaxDepth {
			r.fail(at, "%s: arrays nested deeper than %d", what, MaxDepth)
			return Value{}
		}
		elem := ValueType(r.u32())
		if r.err == nil && elem >= numValueTypes {
			r.fail(at, "%s: unknown array element type %d", what, uint32(elem))
			return Value{}
		}
		return Value{t, r.array(elem, depth+1, what)}
	}
	r.fail(at, "%s: unknown value type %d", what, uint32(t))
	return Value{}
}

func (r *reader) array(elem ValueType, depth int, what string) Array {
	min := int64(elem.size())
	switch elem {
	case String:
		min = 8
	case ArrayType:
		min = 12
	}
	n := r.count(what+" array", min)
	if r.err != nil {
		return Array{}
	}
	a := Array{Elem: elem}
	switch elem {
	case String:
		v := make([]string, n)
		for i := range v {
			v[i] = r.str(what)
		}
		a.V = v
	case ArrayType:
		v := make([]Array, n)
		for i := range v {
			at := r.off
			et := ValueType(r.u32())
			if r.err == nil && et >= numValueTypes {
				r.fail(at, "%s: unknown array element type %d", what, uint32(et))
			}
			if r.err != nil {
				return Array{}
			}
			if depth >= MaxDepth {
				r.fail(at, "%s: arrays nested deeper than %d", what, MaxDepth)
				return Array{}
			}
			v[i] = r.array(et, depth+1, what)
		}
		a.V = v
	default:
		raw := r.bytes(int64(n)*min, what)
		if raw == nil {
			return Array{}
		}
		a.V = decodeScalars(elem, raw, int(n))
		if elem == Bool {
			for _, b := range raw {
				if b > 1 {
					r.fail(r.off, "%s: bool byte %d is neither 0 nor 1", what, b)
				}
			}
		}
	}
	return a
}

func decodeScalars(t ValueType, raw []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return append([]uint8(nil), raw...)
	case Int8:
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(raw[i])
		}
		return v
	case Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = raw[i] == 1
		}
		return v
	case Uint16:
		v := make([]uint16, n)
		for i := range v {
			v[i] = le.Uint16(raw[2*i:])
		}
		return v
	case Int16:
		v := make([]int16, n)
		for i := range v {
			v[i] = int16(le.Uint16(raw[2*i:]))
		}
		return v
	case Uint32:
		v := make([]uint32, n)
		for i := range v {
			v[i] = le.Uint32(raw[4*i:])
		}
		return v
	case Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(le.Uint32(raw[4*i:]))
		}
		return v
	case Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return v
	case Uint64:
		v := make([]uint64, n)
		for i := range v {
			v[i] = le.Uint64(raw[8*i:])
		}
		return v
	case Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(le.Uint64(raw[8*i:]))
		}
		return v
	case Float64:
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return v
	}
	return nil
}

// Parse reads a GGUF file held in data; tensors are views of data.
func Parse(data []byte) (*File, error) { return parse(data, "") }

func parse(data []byte, path string) (*File, error) {
	r := &reader{data: data, path: path}
	if magic := r.bytes(4, "magic"); r.err != nil || string(magic) != Magic {
		r.err = nil
		r.fail(0, "not a GGUF file (magic %q)", magic)
		return nil, r.err
	}
	f := &File{Version: r.u32(), path: path, byName: map[string]int{}, byKey: map[string]int{}}
	if r.err != nil {
		return nil, r.err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, &VersionError{Path: path, Version: f.Version}
	}
	nTensors := r.count("tensor", 8+4+4+8)
	nKV := r.count("metadata", 8+4+1)
	if r.err != nil {
		return nil, r.err
	}
	f.KV = make([]KV, 0, nKV)
	for range nKV {
		at := r.off
		key := r.str("key")
		if r.err == nil && !utf8.ValidString(key) {
			r.fail(at, "key is not valid UTF-8")
		}
		if _, dup := f.byKey[key]; dup && r.err == nil {
			r.fail(at, "duplicate key %q", key)
		}
		t := ValueType(r.u32())
		v := r.value(t, 0, key)
		if r.err != nil {
			return nil, r.err
		}
		f.byKey[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, isInt := asInt(v)
		if !isInt || a <= 0 || a > 1<<30 || a&(a-1) != 0 {
			r.fail(-1, "general.alignment %v is not a power of two", v.V)
			return nil, r.err
		}
		f.Alignment = int(a)
	}
	f.infos = make([]TensorInfo, 0, nTensors)
	sizes := make([]int64, 0, nTensors)
	for range nTensors {
		at := r.off
		ti := TensorInfo{Name: r.str("tensor name")}
		nd := r.u32()
		if r.err == nil && nd > MaxDims {
			r.fail(at, "tensor %q has %d dimensions (at most %d)", ti.Name, nd, MaxDims)
		}
		if r.err != nil {
			return nil, r.err
		}
		ti.NE = make([]int64, nd)
		for j := range ti.NE {
			d := r.u64()
			if d > math.MaxInt64 {
				r.fail(at, "tensor %q: dimension %d too large", ti.Name, d)
			}
			ti.NE[j] = int64(d)
		}
		ti.Type = r.u32()
		ti.Offset = r.u64()
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := f.byName[ti.Name]; dup {
			r.fail(at, "duplicate tensor name %q", ti.Name)
			return nil, r.err
		}
		dt, ok := TypeOf(ti.Type)
		if !ok {
			return nil, &tensor.UnsupportedDTypeError{Format: "gguf", DType: fmt.Sprintf("ggml type %d", ti.Type), Tensor: ti.Name}
		}
		n, err := tensor.NumElements(ti.NE)
		if err != nil {
			r.fail(at, "tensor %q: %v", ti.Name, err)
			return nil, r.err
		}
		if len(ti.NE) > 0 && ti.NE[0]%int64(dt.BlockSize()) != 0 {
			r.fail(at, "tensor %q: row of %d elements is not a whole number of %v blocks", ti.Name, ti.NE[0], dt)
			return nil, r.err
		}
		size, err := dt.Bytes(n)
		if err != nil {
			r.fail(at, "tensor %q: %v", ti.Name, err)
			return nil, r.err
		}
		f.byName[ti.Name] = len(f.infos)
		f.infos = append(f.infos, ti)
		sizes = append(sizes, size)
	}
	align := int64(f.Alignment)
	f.DataOffset = (r.off + align - 1) / align * align
	if f.DataOffset > int64(len(data)) && nTensors > 0 {
		r.fail(r.off, "data section at %d starts past the end of the %d-byte file", f.DataOffset, len(data))
		return nil, r.err
	}
	order := make([]int, len(f.infos))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return f.infos[order[a]].Offset < f.infos[order[b]].Offset })
	var end uint64
	for k, i := range order {
		ti, size := f.infos[i], uint64(sizes[i])
		switch {
		case ti.Offset%uint64(align) != 0:
			r.fail(-1, "tensor %q: offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, align)
		case ti.Offset > uint64(len(data)) || size > uint64(int64(len(data))-f.DataOffset) || ti.Offset > uint64(int64(len(data))-f.DataOffset)-size:
			r.fail(-1, "tensor %q: data [%d, +%d) runs past the end of the file", ti.Name, ti.Offset, size)
		case k > 0 && ti.Offset < end:
			r.fail(-1, "tensor %q overlaps the tensor before it", ti.Name)
		}
		if r.err != nil {
			if ce, ok := r.err.(*tensor.CorruptError); ok {
				ce.Offset = f.DataOffset + int64(min(ti.Offset, uint64(math.MaxInt64/2)))
			}
			return nil, r.err
		}
		end = ti.Offset + size
	}
	f.tensors = make([]tensor.Tensor, len(f.infos))
	for i, ti := range f.infos {
		dt, _ := TypeOf(ti.Type)
		start := f.DataOffset + int64(ti.Offset)
		shape := make([]int64, len(ti.NE))
		for j, d := range ti.NE {
			shape[len(shape)-1-j] = d
		}
		f.tensors[i] = tensor.Tensor{Name: ti.Name, DType: dt, Shape: shape, Data: data[start : start+sizes[i] : start+sizes[i]]}
	}
	return f, nil
}

// Tensors lists the tensors in the order of their infos.
func (f *File) Tensors() []tensor.Tensor { return f.tensors }

// TensorInfos lists the tensor infos as stored.
func (f *File) TensorInfos() []TensorInfo { return f.infos }

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (tensor.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return tensor.Tensor{}, false
	}
	return f.tensors[i], true
}

// Close unmaps the file; tensor data is invalid afterwards.
func (f *File) Close() error {
	f.tensors = nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}
