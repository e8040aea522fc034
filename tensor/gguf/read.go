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

// Limits the reader enforces (see the package doc).
const (
	// MaxDepth bounds the nesting of metadata arrays: an array is at depth
	// 1, an array inside it at depth 2, and so on.
	MaxDepth = 8
	// MaxDims is ggml's GGML_MAX_DIMS.
	MaxDims = 4
	// DefaultAlignment is the data alignment when general.alignment is
	// absent (GGUF_DEFAULT_ALIGNMENT).
	DefaultAlignment = 32
	// MaxAlignment bounds general.alignment (real files use 32 or 64).
	MaxAlignment = 1 << 30
)

// Fewest bytes one metadata entry (key length, value type, a one-byte
// value) and one tensor info (name length, dimension count, type, offset)
// take: the header's counts are bounded by them.
const (
	minKVBytes         = 8 + 4 + 1
	minTensorInfoBytes = 8 + 4 + 4 + 8
)

// preallocCap caps the capacity reserved from a count read in a file;
// longer lists grow as their elements are actually read, so memory follows
// the bytes parsed, not the count claimed.
const preallocCap = 1 << 12

// File is a parsed GGUF file.
type File struct {
	Version    uint32
	KV         []KV  // metadata in file order
	Alignment  int   // of tensor data: general.alignment, else 32
	DataOffset int64 // absolute offset of the data section, a multiple of Alignment

	path    string
	infos   []TensorInfo
	tensors []tensor.Tensor
	byName  map[string]int
	byKey   map[string]int
	unmap   func() error
}

// Parse parses a GGUF file held in data. Tensor data are views of data, so
// data must outlive the tensors and stay unmodified.
func Parse(data []byte) (*File, error) { return parse(data, "") }

// reader is a cursor over the file; every read is bounds-checked.
type reader struct {
	data []byte
	off  int64
	path string
}

func (r *reader) corrupt(at int64, format string, args ...any) error {
	return &tensor.CorruptError{Format: "gguf", Path: r.path, Offset: at, Reason: fmt.Sprintf(format, args...)}
}

func (r *reader) left() int64 { return int64(len(r.data)) - r.off }

// next returns the next n bytes.
func (r *reader) next(n int64, what string) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, r.corrupt(r.off, "%s needs %d bytes, only %d left", what, n, r.left())
	}
	b := r.data[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a uint64 length and that many bytes.
func (r *reader) str(what string) (string, error) {
	at := r.off
	n, err := r.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", r.corrupt(at, "%s: length %d exceeds the %d bytes left", what, n, r.left())
	}
	b, _ := r.next(int64(n), what)
	return string(b), nil
}

// count reads a uint64 count of items that take at least minSize (≥ 1)
// bytes each, and checks that the rest of the file could hold them.
func (r *reader) count(what string, minSize int64) (int, error) {
	at := r.off
	n, err := r.u64(what + " count")
	if err != nil {
		return 0, err
	}
	if n > uint64(r.left()/minSize) {
		return 0, r.corrupt(at, "%s count %d cannot fit: at least %d bytes each, %d bytes left", what, n, minSize, r.left())
	}
	return int(n), nil
}

// value reads a value of type t (already checked to be known).
func (r *reader) value(t ValueType, key string) (any, error) {
	switch t {
	case String:
		return r.str(fmt.Sprintf("key %q: string", key))
	case ArrayType:
		return r.array(1, key)
	}
	at := r.off
	b, err := r.next(t.size(), fmt.Sprintf("key %q: %v value", key, t))
	if err != nil {
		return nil, err
	}
	if t == Bool && b[0] > 1 {
		return nil, r.corrupt(at, "key %q: bool byte %d is neither 0 nor 1", key, b[0])
	}
	return decodeScalar(t, b), nil
}

// array reads an array's element type, count and elements; depth is its
// nesting level (1 for a top-level array).
func (r *reader) array(depth int, key string) (Array, error) {
	at := r.off
	if depth > MaxDepth {
		return Array{}, r.corrupt(at, "key %q: arrays nested deeper than %d", key, MaxDepth)
	}
	et, err := r.u32(fmt.Sprintf("key %q: array element type", key))
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	if elem >= numValueTypes {
		return Array{}, r.corrupt(at, "key %q: unknown array element type %d", key, et)
	}
	n, err := r.count(fmt.Sprintf("key %q: %v array", key, elem), elem.minSize())
	if err != nil {
		return Array{}, err
	}
	switch elem {
	case String:
		v := make([]string, 0, min(n, preallocCap))
		for range n {
			s, err := r.str(fmt.Sprintf("key %q: string %d", key, len(v)))
			if err != nil {
				return Array{}, err
			}
			v = append(v, s)
		}
		return Array{elem, v}, nil
	case ArrayType:
		v := make([]Array, 0, min(n, preallocCap))
		for range n {
			sub, err := r.array(depth+1, key)
			if err != nil {
				return Array{}, err
			}
			v = append(v, sub)
		}
		return Array{elem, v}, nil
	}
	start := r.off
	raw, _ := r.next(int64(n)*elem.size(), "") // count checked that they fit
	if elem == Bool {
		for i, b := range raw {
			if b > 1 {
				return Array{}, r.corrupt(start+int64(i), "key %q: bool byte %d is neither 0 nor 1", key, b)
			}
		}
	}
	return Array{elem, decodeScalars(elem, raw, n)}, nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return b[0]
	case Int8:
		return int8(b[0])
	case Bool:
		return b[0] == 1
	case Uint16:
		return le.Uint16(b)
	case Int16:
		return int16(le.Uint16(b))
	case Uint32:
		return le.Uint32(b)
	case Int32:
		return int32(le.Uint32(b))
	case Float32:
		return math.Float32frombits(le.Uint32(b))
	case Uint64:
		return le.Uint64(b)
	case Int64:
		return int64(le.Uint64(b))
	case Float64:
		return math.Float64frombits(le.Uint64(b))
	}
	return nil
}

// decodeScalars decodes n values of scalar type t from raw (n·size bytes)
// into a new, non-nil slice.
func decodeScalars(t ValueType, raw []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return append(make([]uint8, 0, n), raw...)
	case Int8:
		return fill(make([]int8, n), func(i int) int8 { return int8(raw[i]) })
	case Bool:
		return fill(make([]bool, n), func(i int) bool { return raw[i] == 1 })
	case Uint16:
		return fill(make([]uint16, n), func(i int) uint16 { return le.Uint16(raw[2*i:]) })
	case Int16:
		return fill(make([]int16, n), func(i int) int16 { return int16(le.Uint16(raw[2*i:])) })
	case Uint32:
		return fill(make([]uint32, n), func(i int) uint32 { return le.Uint32(raw[4*i:]) })
	case Int32:
		return fill(make([]int32, n), func(i int) int32 { return int32(le.Uint32(raw[4*i:])) })
	case Float32:
		return fill(make([]float32, n), func(i int) float32 { return math.Float32frombits(le.Uint32(raw[4*i:])) })
	case Uint64:
		return fill(make([]uint64, n), func(i int) uint64 { return le.Uint64(raw[8*i:]) })
	case Int64:
		return fill(make([]int64, n), func(i int) int64 { return int64(le.Uint64(raw[8*i:])) })
	case Float64:
		return fill(make([]float64, n), func(i int) float64 { return math.Float64frombits(le.Uint64(raw[8*i:])) })
	}
	return nil
}

func fill[T any](v []T, at func(int) T) []T {
	for i := range v {
		v[i] = at(i)
	}
	return v
}

// parsedInfo is what the layout checks need to know of a tensor info.
type parsedInfo struct {
	size   int64 // bytes of data
	nameAt int64 // file offset of the info (its name)
	offAt  int64 // file offset of the info's offset field
}

func parse(data []byte, path string) (*File, error) {
	r := &reader{data: data, path: path}
	if len(data) < 4 || string(data[:4]) != Magic {
		return nil, r.corrupt(0, "not a GGUF file: starts with %q, want %q", data[:min(4, len(data))], Magic)
	}
	r.off = 4
	version, err := r.u32("version")
	if err != nil {
		return nil, err
	}
	if version != 2 && version != 3 {
		swapped := bits.ReverseBytes32(version)
		return nil, &VersionError{Path: path, Version: version, BigEndian: swapped == 2 || swapped == 3}
	}
	f := &File{Version: version, path: path}

	at := r.off
	nTensors, err := r.count("tensor", minTensorInfoBytes)
	if err != nil {
		return nil, err
	}
	nKV, err := r.count("metadata", minKVBytes)
	if err != nil {
		return nil, err
	}
	// Each count fits alone; together they must fit too (no overflow:
	// each product is at most the bytes left).
	if int64(nTensors)*minTensorInfoBytes+int64(nKV)*minKVBytes > r.left() {
		return nil, r.corrupt(at, "%d tensor infos and %d metadata entries cannot fit in the %d bytes left", nTensors, nKV, r.left())
	}

	f.KV = make([]KV, 0, min(nKV, preallocCap))
	f.byKey = make(map[string]int, min(nKV, preallocCap))
	alignAt := int64(-1)
	for range nKV {
		at := r.off
		key, err := r.str("key")
		if err != nil {
			return nil, err
		}
		if !utf8.ValidString(key) {
			return nil, r.corrupt(at, "key %q is not valid UTF-8", key)
		}
		if _, dup := f.byKey[key]; dup {
			return nil, r.corrupt(at, "duplicate key %q", key)
		}
		typeAt := r.off
		t, err := r.u32(fmt.Sprintf("key %q: value type", key))
		if err != nil {
			return nil, err
		}
		if ValueType(t) >= numValueTypes {
			return nil, r.corrupt(typeAt, "key %q: unknown value type %d", key, t)
		}
		if key == "general.alignment" {
			alignAt = r.off
		}
		v, err := r.value(ValueType(t), key)
		if err != nil {
			return nil, err
		}
		f.byKey[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: Value{ValueType(t), v}})
	}

	f.Alignment = DefaultAlignment
	if i, ok := f.byKey["general.alignment"]; ok {
		v := f.KV[i].Value
		a, isInt := asInt(v)
		if !isInt || a <= 0 || a > MaxAlignment || a&(a-1) != 0 {
			return nil, r.corrupt(alignAt, "general.alignment %v (%v) is not an integer power of two in [1, %d]", v.V, v.Type, MaxAlignment)
		}
		f.Alignment = int(a)
	}
	align := int64(f.Alignment)

	f.infos = make([]TensorInfo, 0, min(nTensors, preallocCap))
	f.byName = make(map[string]int, min(nTensors, preallocCap))
	parsed := make([]parsedInfo, 0, min(nTensors, preallocCap))
	for range nTensors {
		ti, p, err := r.tensorInfo(align)
		if err != nil {
			return nil, err
		}
		if _, dup := f.byName[ti.Name]; dup {
			return nil, r.corrupt(p.nameAt, "duplicate tensor name %q", ti.Name)
		}
		f.byName[ti.Name] = len(f.infos)
		f.infos = append(f.infos, ti)
		parsed = append(parsed, p)
	}

	// The data section starts at the next multiple of the alignment; r.off
	// ≤ len(data) and align ≤ 2^30, so this cannot overflow.
	f.DataOffset = (r.off + align - 1) / align * align
	if err := f.checkLayout(r, parsed); err != nil {
		return nil, err
	}
	f.tensors = make([]tensor.Tensor, len(f.infos))
	for i, ti := range f.infos {
		dt, _ := TypeOf(ti.Type)
		start := f.DataOffset + int64(ti.Offset)
		end := start + parsed[i].size
		shape := make([]int64, len(ti.NE)) // ne reversed: outermost first
		for j, d := range ti.NE {
			shape[len(shape)-1-j] = d
		}
		f.tensors[i] = tensor.Tensor{Name: ti.Name, DType: dt, Shape: shape, Data: data[start:end:end]}
	}
	return f, nil
}

// tensorInfo reads one tensor info and checks it on its own: dimensions,
// type, element count, row blocks, offset alignment.
func (r *reader) tensorInfo(align int64) (TensorInfo, parsedInfo, error) {
	var ti TensorInfo
	p := parsedInfo{nameAt: r.off}
	name, err := r.str("tensor name")
	if err != nil {
		return ti, p, err
	}
	ti.Name = name
	ndAt := r.off
	nd, err := r.u32(fmt.Sprintf("tensor %q: dimension count", name))
	if err != nil {
		return ti, p, err
	}
	if nd > MaxDims {
		return ti, p, r.corrupt(ndAt, "tensor %q has %d dimensions, at most %d", name, nd, MaxDims)
	}
	ti.NE = make([]int64, nd)
	for j := range ti.NE {
		dAt := r.off
		d, err := r.u64(fmt.Sprintf("tensor %q: dimension", name))
		if err != nil {
			return ti, p, err
		}
		if d == 0 || d > math.MaxInt64 {
			return ti, p, r.corrupt(dAt, "tensor %q: ne[%d] = %d, want 1 to 2^63-1", name, j, d)
		}
		ti.NE[j] = int64(d)
	}
	typeAt := r.off
	if ti.Type, err = r.u32(fmt.Sprintf("tensor %q: type", name)); err != nil {
		return ti, p, err
	}
	p.offAt = r.off
	if ti.Offset, err = r.u64(fmt.Sprintf("tensor %q: offset", name)); err != nil {
		return ti, p, err
	}
	dt, ok := TypeOf(ti.Type)
	if !ok {
		var err error = &tensor.UnsupportedDTypeError{Format: "gguf", DType: typeName(ti.Type), Tensor: name}
		if r.path != "" {
			err = fmt.Errorf("gguf %s: byte %d: %w", r.path, typeAt, err)
		}
		return ti, p, err
	}
	n, err := tensor.NumElements(ti.NE)
	if err != nil {
		return ti, p, r.corrupt(ndAt, "tensor %q: ne %v: element count overflows", name, ti.NE)
	}
	if bs := int64(dt.BlockSize()); nd > 0 && ti.NE[0]%bs != 0 {
		return ti, p, r.corrupt(ndAt+4, "tensor %q: a row of %d elements is not a whole number of %v blocks of %d", name, ti.NE[0], dt, bs)
	}
	if p.size, err = dt.Bytes(n); err != nil {
		return ti, p, r.corrupt(ndAt, "tensor %q: %d elements of %v: %v", name, n, dt, err)
	}
	if ti.Offset%uint64(align) != 0 {
		return ti, p, r.corrupt(p.offAt, "tensor %q: offset %d is not a multiple of the alignment %d", name, ti.Offset, align)
	}
	return ti, p, nil
}

// checkLayout checks that every tensor's data lie inside the file and that
// no two tensors share a byte (they may be stored in any order).
func (f *File) checkLayout(r *reader, parsed []parsedInfo) error {
	room := int64(len(r.data)) - f.DataOffset // bytes in the data section; < 0 if none
	for i, ti := range f.infos {
		size := parsed[i].size
		if room < 0 || ti.Offset > uint64(room) || size > room-int64(ti.Offset) {
			return r.corrupt(parsed[i].offAt, "tensor %q: %d bytes at data offset %d run past the end of the file (data section of %d bytes at %d)",
				ti.Name, size, ti.Offset, max(room, 0), f.DataOffset)
		}
	}
	// Sorted by offset, ties in info order, so the later info is the one
	// blamed.
	order := make([]int, len(f.infos))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return f.infos[order[a]].Offset < f.infos[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := order[k-1], order[k]
		prevEnd := f.infos[prev].Offset + uint64(parsed[prev].size) // inside the file: no overflow
		if f.infos[cur].Offset < prevEnd {
			return r.corrupt(parsed[cur].offAt, "tensor %q (data [%d, %d)) overlaps tensor %q (data [%d, %d))",
				f.infos[cur].Name, f.infos[cur].Offset, f.infos[cur].Offset+uint64(parsed[cur].size),
				f.infos[prev].Name, f.infos[prev].Offset, prevEnd)
		}
	}
	return nil
}

// Tensors lists the tensors in the order of their infos in the file.
// Shapes are ne reversed (outermost first); Data are views of the file.
func (f *File) Tensors() []tensor.Tensor { return f.tensors }

// TensorInfos lists the tensor infos as stored (ne innermost first).
func (f *File) TensorInfos() []TensorInfo { return f.infos }

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (tensor.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok || i >= len(f.tensors) {
		return tensor.Tensor{}, false
	}
	return f.tensors[i], true
}

// Close unmaps the file (for Open); tensor data are invalid afterwards and
// Tensors returns nothing. Metadata stays readable.
func (f *File) Close() error {
	f.tensors = nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}
