package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vkllm/vkllm/tensor"
)

// Write writes tensors (in the order given) and metadata as a safetensors
// file. The header is padded with spaces to a multiple of 8 bytes, as the
// reference implementation does.
func Write(w io.Writer, tensors []tensor.Tensor, metadata map[string]string) error {
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			hdr.WriteByte(',')
		}
		first = false
	}
	if len(metadata) > 0 {
		sep()
		m, err := json.Marshal(metadata) // sorted keys
		if err != nil {
			return err
		}
		hdr.WriteString(`"__metadata__":`)
		hdr.Write(m)
	}
	seen := map[string]bool{}
	var off int64
	for _, t := range tensors {
		name, ok := dtypeName(t.DType)
		if !ok {
			return &tensor.UnsupportedDTypeError{Format: "safetensors", DType: t.DType.String(), Tensor: t.Name}
		}
		if seen[t.Name] || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: write: duplicate or reserved tensor name %q", t.Name)
		}
		seen[t.Name] = true
		n, err := tensor.NumElements(t.Shape)
		if err != nil {
			return fmt.Errorf("safetensors: write %q: %w", t.Name, err)
		}
		size, err := t.DType.Bytes(n)
		if err != nil || size != int64(len(t.Data)) {
			return fmt.Errorf("safetensors: write %q: %d bytes of data for shape %v of %v", t.Name, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		e, _ := json.Marshal(map[string]any{"dtype": name, "shape": shape, "data_offsets": []int64{off, off + size}})
		k, _ := json.Marshal(t.Name)
		sep()
		hdr.Write(k)
		hdr.WriteByte(':')
		hdr.Write(e)
		off += size
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(hdr.Len()))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes a safetensors file atomically (temporary file, rename).
func WriteFile(path string, tensors []tensor.Tensor, metadata map[string]string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".safetensors-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := Write(tmp, tensors, metadata); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
