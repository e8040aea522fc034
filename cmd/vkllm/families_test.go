package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// familyModels are the tiny models of the families past Llama and Qwen2,
// with what `vkllm inspect` says sets each apart.
var familyModels = []struct{ path, arch, feature string }{
	{"qwen3-tiny", "qwen3", "q/k norm per head"},
	{"qwen3-tiny-F16.gguf", "qwen3", "q/k norm per head"},
	{"mistral-tiny", "mistral", "sliding window 8 on layers [0 1]"},
	{"qwen2-swa-tiny", "qwen2", "sliding window 8 on layers [1]"},
	{"smollm3-tiny", "smollm3", "no RoPE on layers [3]"},
	{"smollm3-tiny-F32.gguf", "smollm3", "no RoPE on layers [3]"},
}

// TestFamiliesInspectGenerate: inspect reads each tiny model of the newer
// families and says it would load, and generate runs it.
func TestFamiliesInspectGenerate(t *testing.T) {
	for _, m := range familyModels {
		t.Run(m.path, func(t *testing.T) {
			path := filepath.Join("../../testdata/models", m.path)
			var out, errb bytes.Buffer
			if code := runInspect([]string{path}, &out, &errb); code != 0 {
				t.Fatalf("inspect: exit %d: %s", code, errb.String())
			}
			for _, want := range []string{"architecture:  " + m.arch + "\n", "  " + m.feature + "\n", "check:         ok, would load"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("inspect output lacks %q:\n%s", want, out.String())
				}
			}
			out.Reset()
			if code := runGen(context.Background(), []string{"--model", path, "--prompt", "Hello world", "--max-tokens", "12",
				"--ignore-eos", "--json"}, &out, &errb); code != 0 {
				t.Fatalf("generate: exit %d: %s", code, errb.String())
			}
			var r Result
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.PromptTokens) == 0 || len(r.Tokens) != 12 {
				t.Fatalf("generate: %+v", r)
			}
		})
	}
}
