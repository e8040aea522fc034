package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	for _, path := range []string{"../../testdata/models/llama-tiny-sharded", "../../testdata/models/qwen2-tiny-Q4_0.gguf"} {
		var out, errb bytes.Buffer
		if code := run([]string{"--json", path}, &out, &errb); code != 0 {
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
		if code := run([]string{path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "architecture:") {
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
		code := run([]string{path}, &out, &errb)
		msg := errb.String()
		if code != 1 || !strings.HasPrefix(msg, "error: ") || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q", path, code, msg)
		}
	}
}
