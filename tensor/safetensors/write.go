package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tensor"
)

// Errors of Write, wrapped with the tensor's name.
var (
	ErrDuplicateName = errors.New("safetensors: duplicate tensor name")
	ErrReservedName  = errors.New("safetensors: tensor name __metadata__ is reserved")
	ErrInvalidUTF8   = errors.New("safetensors: name or metadata is not valid UTF-8")
	ErrDataSize      = errors.New("safetensors: data length does not match shape and dtype")
	ErrHeaderTooBig  = errors.New("safetensors: header exceeds MaxHeaderSize")
)

// headerEntry is one tensor in the header, fields in the Python package's
// order.
type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Write writes tensors (data in the order given, which is the order Parse
// returns them) and metadata (may be nil) as a safetensors file:
// __metadata__ first, then the tensors, the header padded with spaces to
// a multiple of 8 bytes as the reference implementation does, so the
// data section starts 8-byte aligned. Tensors are not padded: to keep each
// one aligned to its element size, order them by decreasing element size.
func Write(w io.Writer, tensors []tensor.Tensor, metadata map[string]string) error {
	hdr, err := encodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: write %q: %w", t.Name, err)
		}
	}
	return nil
}

// encodeHeader returns the 8-byte length and the padded JSON header.
func encodeHeader(tensors []tensor.Tensor, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, 8)) // the length, filled in below
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	put := func(v any) {
		enc.Encode(v)               // cannot fail for strings, string maps and headerEntry
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("%w: metadata %q", ErrInvalidUTF8, k)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			put(k)
			buf.WriteByte(':')
			put(metadata[k])
		}
		buf.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		name, ok := dtypeName(t.DType)
		if !ok {
			return nil, &tensor.UnsupportedDTypeError{Format: "safetensors", DType: t.DType.String(), Tensor: t.Name}
		}
		switch {
		case t.Name == "__metadata__":
			return nil, ErrReservedName
		case seen[t.Name]:
			return nil, fmt.Errorf("%w: %q", ErrDuplicateName, t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("%w: tensor %q", ErrInvalidUTF8, t.Name)
		}
		seen[t.Name] = true
		n, err := tensor.NumElements(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("safetensors: write %q: %w", t.Name, err)
		}
		size, err := t.DType.Bytes(n)
		if err != nil || size != int64(len(t.Data)) {
			return nil, fmt.Errorf("%w: tensor %q has %d bytes, shape %v of %v needs %d", ErrDataSize, t.Name, len(t.Data), t.Shape, t.DType, size)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{} // a scalar
		}
		if i > 0 || len(metadata) > 0 {
			buf.WriteByte(',')
		}
		put(t.Name)
		buf.WriteByte(':')
		put(headerEntry{DType: name, Shape: shape, DataOffsets: [2]int64{off, off + size}})
		off += size
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	out := buf.Bytes()
	n := len(out) - 8
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrHeaderTooBig, n)
	}
	binary.LittleEndian.PutUint64(out, uint64(n))
	return out, nil
}

// WriteFile writes a safetensors file atomically: to a temporary file in
// the same folder, synced, then renamed over path (mode 0644).
func WriteFile(path string, tensors []tensor.Tensor, metadata map[string]string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".safetensors-*.tmp")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := Write(tmp, tensors, metadata); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
