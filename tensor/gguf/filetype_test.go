package gguf

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestFileTypeName(t *testing.T) {
	for _, c := range []struct {
		ft   uint32
		want string
	}{
		{0, "F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"},
		{15, "Q4_K_M"}, {32, "BF16"}, {38, "MXFP4_MOE"},
		{4, ""}, {33, ""}, {1024, ""}, // retired, unused, LLAMA_FTYPE_GUESSED
	} {
		if got := FileTypeName(c.ft); got != c.want {
			t.Errorf("FileTypeName(%d) = %q, want %q", c.ft, got, c.want)
		}
	}
}

// TestFileType reads general.file_type of the test models, whose file
// names end with the type they were written as.
func TestFileType(t *testing.T) {
	for _, want := range []string{"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q8_0"} {
		f, err := Open(filepath.Join("..", "..", "testdata", "models", "qwen2-tiny-"+want+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.FileType(); got != want {
			t.Errorf("qwen2-tiny-%s.gguf: FileType() = %q", want, got)
		}
		f.Close()
	}
	for _, c := range []struct {
		name string
		kv   []KV
	}{
		{"missing", nil},
		{"negative", []KV{{Key: "general.file_type", Value: Value{Type: Int64, V: int64(-1<<32 + 3)}}}},
		{"above uint32", []KV{{Key: "general.file_type", Value: Value{Type: Uint64, V: uint64(1<<32 + 3)}}}},
		{"unknown", []KV{{Key: "general.file_type", Value: Value{Type: Uint32, V: uint32(1024)}}}},
		{"string", []KV{{Key: "general.file_type", Value: Value{Type: String, V: "Q4_1"}}}},
	} {
		var buf bytes.Buffer
		if err := Write(&buf, c.kv, nil, nil); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got := f.FileType(); got != "" {
			t.Errorf("%s: FileType() = %q, want \"\"", c.name, got)
		}
	}
}
