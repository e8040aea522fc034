package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/vkllm/vkllm/tensor"
)

// MaxHeaderSize is the format's bound on the JSON header.
const MaxHeaderSize = 100_000_000

// File is a parsed safetensors file.
type File struct {
	path    string
	data    []byte // the whole file
	unmap   func() error
	tensors []tensor.Tensor // by data offset
	byName  map[string]int
	meta    map[string]string
}

// dtypes maps the format's names to ours.
var dtypes = map[string]tensor.DType{
	"F64": tensor.F64, "F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16,
	"I64": tensor.I64, "I32": tensor.I32, "I16": tensor.I16, "I8": tensor.I8,
	"U8": tensor.U8, "BOOL": tensor.Bool,
}

func dtypeName(dt tensor.DType) (string, bool) {
	for k, v := range dtypes {
		if v == dt {
			return k, true
		}
	}
	return "", false
}

// Parse reads a safetensors file held in data. The File's tensors are
// views of data.
func Parse(data []byte) (*File, error) { return parse(data, "") }

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
	body := data[dataStart:]

	entries, meta, err := parseHeader(header)
	if err != nil {
		var off int64 = 8
		if se, ok := err.(*headerError); ok {
			off += se.offset
		}
		return nil, corrupt(off, "header: %v", err)
	}
	f := &File{path: path, data: data, byName: make(map[string]int, len(entries)), meta: meta}
	type placed struct {
		t     tensor.Tensor
		begin int64
	}
	all := make([]placed, 0, len(entries))
	for _, e := range entries {
		dt, ok := dtypes[e.DType]
		if !ok {
			return nil, &tensor.UnsupportedDTypeError{Format: "safetensors", DType: strconv.Quote(e.DType), Tensor: e.name}
		}
		count, err := tensor.NumElements(e.Shape)
		if err != nil {
			return nil, corrupt(8, "tensor %q: %v", e.name, err)
		}
		size, err := dt.Bytes(count)
		if err != nil {
			return nil, corrupt(8, "tensor %q: %v", e.name, err)
		}
		begin, end := e.Offsets[0], e.Offsets[1]
		switch {
		case begin < 0 || end < begin:
			return nil, corrupt(8, "tensor %q has data_offsets [%d, %d]", e.name, begin, end)
		case end-begin != size:
			return nil, corrupt(8, "tensor %q: shape %v of %v needs %d bytes, data_offsets give %d", e.name, e.Shape, dt, size, end-begin)
		case end > int64(len(body)):
			return nil, corrupt(dataStart+begin, "tensor %q: data [%d, %d) runs past the %d-byte data section", e.name, begin, end, len(body))
		}
		all = append(all, placed{tensor.Tensor{Name: e.name, DType: dt, Shape: e.Shape, Data: body[begin:end:end]}, begin})
	}
	// In data order, the ranges must tile the data section exactly.
	sort.SliceStable(all, func(i, j int) bool { return all[i].begin < all[j].begin })
	var at int64
	for _, p := range all {
		if p.begin < at {
			return nil, corrupt(dataStart+p.begin, "tensor %q overlaps the tensor before it", p.t.Name)
		}
		if p.begin > at {
			return nil, corrupt(dataStart+at, "%d bytes of the data section belong to no tensor", p.begin-at)
		}
		at = p.begin + int64(len(p.t.Data))
	}
	if at != int64(len(body)) {
		return nil, corrupt(dataStart+at, "%d bytes after the last tensor belong to no tensor", int64(len(body))-at)
	}
	for i, p := range all {
		f.tensors = append(f.tensors, p.t)
		f.byName[p.t.Name] = i
	}
	return f, nil
}

type entry struct {
	name    string
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

type headerError struct {
	offset int64
	msg    string
}

func (e *headerError) Error() string { return e.msg }

// parseHeader walks the JSON object token by token so that duplicate keys
// and wrong shapes are caught, and returns entries in header order.
func parseHeader(h []byte) ([]entry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(h))
	dec.UseNumber()
	fail := func(format string, args ...any) error {
		return &headerError{offset: dec.InputOffset(), msg: fmt.Sprintf(format, args...)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fail("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fail("not a JSON object")
	}
	seen := map[string]bool{}
	var entries []entry
	var meta map[string]string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fail("invalid JSON: %v", err)
		}
		name := tok.(string)
		if seen[name] {
			return nil, nil, fail("duplicate key %q", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fail("invalid JSON for %q: %v", name, err)
		}
		if name == "__metadata__" {
			if meta, err = parseMeta(raw); err != nil {
				return nil, nil, fail("__metadata__: %v", err)
			}
			continue
		}
		e, err := parseEntry(raw)
		if err != nil {
			return nil, nil, fail("tensor %q: %v", name, err)
		}
		e.name = name
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fail("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fail("trailing data after the header object")
	}
	return entries, meta, nil
}

func parseMeta(raw json.RawMessage) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	m := map[string]string{}
	for dec.More() {
		k, _ := dec.Token()
		key := k.(string)
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		v, err := dec.Token()
		if err != nil {
			return nil, err
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("value of %q is not a string", key)
		}
		m[key] = s
	}
	return m, nil
}

func parseEntry(raw json.RawMessage) (entry, error) {
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("want {dtype, shape, data_offsets}: %v", err)
	}
	if e.DType == "" || e.Shape == nil || e.Offsets == nil {
		return e, fmt.Errorf("missing dtype, shape or data_offsets")
	}
	if len(e.Offsets) != 2 {
		return e, fmt.Errorf("data_offsets has %d values, want 2", len(e.Offsets))
	}
	for _, d := range e.Shape {
		if d < 0 {
			return e, fmt.Errorf("negative dimension in shape %v", e.Shape)
		}
	}
	return e, nil
}

// Tensors lists the tensors in data order.
func (f *File) Tensors() []tensor.Tensor { return f.tensors }

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (tensor.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return tensor.Tensor{}, false
	}
	return f.tensors[i], true
}

// Metadata returns the header's __metadata__ (nil if absent).
func (f *File) Metadata() map[string]string { return f.meta }

// Close unmaps the file; tensor data is invalid afterwards.
func (f *File) Close() error {
	f.tensors, f.byName, f.data = nil, nil, nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}
