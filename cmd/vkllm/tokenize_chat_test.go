package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChat renders a request through a model without a template (ChatML
// fallback) and checks the prompt is printed exactly.
func TestTokenizeChat(t *testing.T) {
	req := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(req, []byte(`[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi ✓"}]`), 0o644)
	var out, errb bytes.Buffer
	if code := runTokenize([]string{"--model", "../../testdata/models/qwen2-tiny", "--chat", req}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi ✓<|im_end|>\n<|im_start|>assistant\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	os.WriteFile(req, []byte(`{"messages":[]}`), 0o644)
	out.Reset()
	errb.Reset()
	if code := runTokenize([]string{"--model", "../../testdata/models/qwen2-tiny", "--chat", req}, strings.NewReader(""), &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "error: ") {
		t.Errorf("empty messages: exit %d, %q", code, errb.String())
	}
}
