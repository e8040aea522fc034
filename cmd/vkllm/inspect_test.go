package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

func TestInspect(t *testing.T) {
	for _, path := range []string{"../../testdata/models/llama-tiny-sharded", "../../testdata/models/qwen2-tiny-Q4_0.gguf"} {
		var out, errb bytes.Buffer
		if code := runInspect([]string{"--json", path}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, errb.String())
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Tensors == 0 || r.Parameters == 0 || r.FileBytes == 0 || r.Config == nil {
			t.Errorf("%s: %+v", path, r)
		}
		out.Reset()
		if !r.Loads || len(r.Problems) != 0 {
			t.Errorf("%s: loads %v, problems %q", path, r.Loads, r.Problems)
		}
		out.Reset()
		if code := runInspect([]string{path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "architecture:") ||
			!strings.Contains(out.String(), "\ncheck:         ok, would load") {
			t.Errorf("text output: %q", out.String())
		}
	}
}

func TestInspectBadFiles(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "t.gguf")
	data, _ := os.ReadFile("../../testdata/models/qwen2-tiny-Q8_0.gguf")
	os.WriteFile(trunc, data[:len(data)/2], 0o644)
	garbage := filepath.Join(dir, "g.gguf")
	os.WriteFile(garbage, []byte("GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"), 0o644)
	for _, path := range []string{trunc, garbage, filepath.Join(dir, "missing"), dir} {
		var out, errb bytes.Buffer
		code := runInspect([]string{path}, &out, &errb)
		msg := errb.String()
		if code != 1 || !strings.HasPrefix(msg, "error: ") || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q", path, code, msg)
		}
	}
}

// brokenGGUF writes a copy of qwen2-tiny-F32.gguf with edit applied to
// the tensor named name (dropped when edit returns false).
func brokenGGUF(t *testing.T, name string, edit func(*tensor.Tensor) bool) string {
	t.Helper()
	src, err := gguf.Open("../../testdata/models/qwen2-tiny-F32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var ts []tensor.Tensor
	for _, tt := range src.Tensors() {
		if tt.Name == name && !edit(&tt) {
			continue
		}
		ts = append(ts, tt)
	}
	path := filepath.Join(t.TempDir(), "broken.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, src.KV, ts, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectWouldNotLoad(t *testing.T) {
	for _, tc := range []struct {
		name, tensor string
		edit         func(*tensor.Tensor) bool
		want         string // the problem line
	}{
		{"missing", "blk.1.attn_k.weight", func(*tensor.Tensor) bool { return false },
			"blk.1.attn_k.weight: missing (want shape [32 64])"},
		{"mis-shaped", "blk.0.ffn_down.weight", func(t *tensor.Tensor) bool {
			t.Shape = []int64{t.Shape[1], t.Shape[0]}
			return true
		}, "blk.0.ffn_down.weight: shape [128 64], want [64 128]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := brokenGGUF(t, tc.tensor, tc.edit)
			var out, errb bytes.Buffer
			code := runInspect([]string{path}, &out, &errb)
			if code != 1 || !strings.Contains(out.String(), "\ncheck:         FAILED") || !strings.Contains(out.String(), "\n  "+tc.want+"\n") {
				t.Errorf("exit %d, stdout %q", code, out.String())
			}
			msg := errb.String()
			if !strings.HasPrefix(msg, "error: ") || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.tensor) {
				t.Errorf("stderr %q", msg)
			}
			out.Reset()
			errb.Reset()
			if code := runInspect([]string{"--json", path}, &out, &errb); code != 1 {
				t.Errorf("--json: exit %d", code)
			}
			var r Report
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Loads || len(r.Problems) != 1 || r.Problems[0] != tc.want {
				t.Errorf("--json: loads %v, problems %q", r.Loads, r.Problems)
			}
		})
	}
}
