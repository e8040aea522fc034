package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tensor"
)

// MaxHeaderSize is the format's bound on the JSON header (bytes).
const MaxHeaderSize = 100_000_000

// File is a parsed safetensors file. Its tensors' Data are views of the
// bytes it was parsed from (the mapping, for Open), valid until Close.
type File struct {
	path    string
	data    []byte // the whole file
	unmap   func() error
	tensors []tensor.Tensor // in data-offset order
	byName  map[string]int  // name → index in tensors
	meta    map[string]string
}

// formatDType is one element type the format names: its size in bits and
// the tensor.DType it reads as (tensor.Invalid if vkllm has none).
type formatDType struct {
	bits int64
	dt   tensor.DType
}

// formatDTypes lists every dtype of the reference implementation (0.8.0).
// Names outside this list make the header corrupt; names in it without a
// DType give *tensor.UnsupportedDTypeError.
var formatDTypes = map[string]formatDType{
	"BOOL": {8, tensor.Bool}, "U8": {8, tensor.U8}, "I8": {8, tensor.I8},
	"I16": {16, tensor.I16}, "F16": {16, tensor.F16}, "BF16": {16, tensor.BF16},
	"I32": {32, tensor.I32}, "F32": {32, tensor.F32},
	"I64": {64, tensor.I64}, "F64": {64, tensor.F64},

	"F4": {4, tensor.Invalid}, "F6_E2M3": {6, tensor.Invalid}, "F6_E3M2": {6, tensor.Invalid},
	"F8_E5M2": {8, tensor.Invalid}, "F8_E4M3": {8, tensor.Invalid}, "F8_E8M0": {8, tensor.Invalid},
	"F8_E4M3FNUZ": {8, tensor.Invalid}, "F8_E5M2FNUZ": {8, tensor.Invalid},
	"U16": {16, tensor.Invalid}, "U32": {32, tensor.Invalid}, "U64": {64, tensor.Invalid},
	"C64": {64, tensor.Invalid},
}

// dtypeName is the format's name for a DType Write can store.
func dtypeName(dt tensor.DType) (string, bool) {
	for name, f := range formatDTypes {
		if f.dt == dt && dt != tensor.Invalid {
			return name, true
		}
	}
	return "", false
}

// Parse reads a safetensors file held in data. The File's tensors are
// views of data; Close on it only drops the references.
func Parse(data []byte) (*File, error) { return parse(data, "") }

// parse validates data as a whole safetensors file, in the reference
// implementation's order: header length, UTF-8, JSON, each entry, then
// the ranges in data order tiling the data section. An unsupported (but
// valid) dtype is reported only once the file is otherwise sound.
func parse(data []byte, path string) (*File, error) {
	corrupt := func(off int64, format string, args ...any) error {
		return &tensor.CorruptError{Format: "safetensors", Path: path, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) < 8 {
		return nil, corrupt(0, "file of %d bytes is shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderSize {
		return nil, corrupt(0, "header length %d exceeds the format's limit of %d", n, MaxHeaderSize)
	}
	if n > uint64(len(data)-8) {
		return nil, corrupt(0, "header length %d runs past the end of the %d-byte file", n, len(data))
	}
	header := data[8 : 8+n]
	dataStart := int64(8 + n)
	body := data[dataStart:] // the data section; data_offsets are relative to it

	if !utf8.Valid(header) {
		return nil, corrupt(8+int64(firstInvalidUTF8(header)), "header is not valid UTF-8")
	}
	entries, meta, err := parseHeader(header)
	if err != nil {
		var he *headerError
		if errors.As(err, &he) {
			return nil, corrupt(8+he.offset, "header: %s", he.msg)
		}
		return nil, corrupt(8, "header: %v", err)
	}

	// Each entry on its own: known dtype, size matching shape, range inside.
	var unsupported *entry
	for i := range entries {
		e := &entries[i]
		at := 8 + e.offset
		fd, ok := formatDTypes[e.dtype]
		if !ok {
			return nil, corrupt(at, "tensor %q: unknown dtype %q", e.name, e.dtype)
		}
		if fd.dt == tensor.Invalid && unsupported == nil {
			unsupported = e
		}
		count, err := tensor.NumElements(e.shape)
		if err != nil {
			return nil, corrupt(at, "tensor %q: %v", e.name, err)
		}
		if count > (1<<62)/fd.bits {
			return nil, corrupt(at, "tensor %q: shape %v of %s overflows", e.name, e.shape, e.dtype)
		}
		if count*fd.bits%8 != 0 {
			return nil, corrupt(at, "tensor %q: %d elements of %s are not a whole number of bytes", e.name, count, e.dtype)
		}
		size := count * fd.bits / 8
		switch {
		case e.end < e.begin:
			return nil, corrupt(at, "tensor %q: data_offsets [%d, %d] end before they begin", e.name, e.begin, e.end)
		case e.end-e.begin != size:
			return nil, corrupt(at, "tensor %q: shape %v of %s needs %d bytes, data_offsets [%d, %d] give %d",
				e.name, e.shape, e.dtype, size, e.begin, e.end, e.end-e.begin)
		case e.end > int64(len(body)):
			return nil, corrupt(at, "tensor %q: data_offsets [%d, %d] run past the %d-byte data section",
				e.name, e.begin, e.end, len(body))
		}
	}

	// In data order the ranges must tile the data section: no overlap, no
	// hole, nothing after the last tensor.
	order := make([]*entry, len(entries))
	for i := range entries {
		order[i] = &entries[i]
	}
	slices.SortStableFunc(order, func(a, b *entry) int {
		if a.begin != b.begin {
			return cmpInt64(a.begin, b.begin)
		}
		return cmpInt64(a.end, b.end)
	})
	var at int64 // end of the ranges so far
	for _, e := range order {
		if e.begin < at {
			return nil, corrupt(dataStart+e.begin, "tensor %q (data_offsets [%d, %d]) overlaps the tensor before it, which ends at %d",
				e.name, e.begin, e.end, at)
		}
		if e.begin > at {
			return nil, corrupt(dataStart+at, "bytes [%d, %d) of the data section belong to no tensor", at, e.begin)
		}
		at = e.end
	}
	if at != int64(len(body)) {
		return nil, corrupt(dataStart+at, "%d bytes after the last tensor belong to no tensor", int64(len(body))-at)
	}

	if unsupported != nil {
		return nil, &tensor.UnsupportedDTypeError{Format: "safetensors", DType: unsupported.dtype, Tensor: unsupported.name}
	}
	f := &File{path: path, data: data, byName: make(map[string]int, len(order)), meta: meta,
		tensors: make([]tensor.Tensor, len(order))}
	for i, e := range order {
		f.tensors[i] = tensor.Tensor{Name: e.name, DType: formatDTypes[e.dtype].dt, Shape: e.shape,
			Data: body[e.begin:e.end:e.end]}
		f.byName[e.name] = i
	}
	return f, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// firstInvalidUTF8 is the index of the first byte of b that does not start
// a valid UTF-8 sequence.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// Tensors lists the tensors in file order (by data offset).
func (f *File) Tensors() []tensor.Tensor { return f.tensors }

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (tensor.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return tensor.Tensor{}, false
	}
	return f.tensors[i], true
}

// Metadata returns the header's __metadata__ (nil if absent or null).
func (f *File) Metadata() map[string]string { return f.meta }

// Close unmaps the file; tensor data is invalid afterwards. Closing twice
// is harmless.
func (f *File) Close() error {
	f.tensors, f.byName, f.data = nil, nil, nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}
