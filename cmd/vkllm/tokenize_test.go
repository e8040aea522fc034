package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llama2Dir writes the llama2 golden tokenizer into a temporary folder.
func llama2Dir(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gz, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tokenizers", "llama2", f+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTokenize(t *testing.T) {
	dir := llama2Dir(t)
	// Ids from HF tokenizers 0.23.3: encode("Hello world", add_special_tokens=True).
	var out, errb bytes.Buffer
	if code := runTokenize([]string{"--model", dir, "--add-special", "--json"}, strings.NewReader("Hello world"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct{ IDs []int32 }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 22557, 1526}; !equal(got.IDs, want) {
		t.Errorf("ids %v, want %v", got.IDs, want)
	}
	out.Reset()
	if code := runTokenize([]string{"--model", dir}, strings.NewReader("Hello world"), &out, &errb); code != 0 || out.String() != "22557 1526\n" {
		t.Errorf("plain output %q (exit %d)", out.String(), code)
	}
	out.Reset()
	errb.Reset()
	if code := runTokenize([]string{"--model", filepath.Join(dir, "missing")}, strings.NewReader(""), &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "error: ") {
		t.Errorf("missing model: exit %d, stderr %q", code, errb.String())
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTokenizeGGUF reads the tokenizer of the real SmolLM2 GGUF when it is
// on this machine (make real-model).
func TestTokenizeGGUF(t *testing.T) {
	home, _ := os.UserHomeDir()
	path := filepath.Join(home, ".cache", "vkllm", "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real model not found at %s: run `make real-model`", path)
	}
	var out, errb bytes.Buffer
	// Ids from HF tokenizers for SmolLM2: digits are split one by one.
	if code := runTokenize([]string{"--model", path, "--json"}, strings.NewReader("Hello world 123"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct{ IDs []int32 }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := []int32{19556, 905, 216, 33, 34, 35}; !equal(got.IDs, want) {
		t.Errorf("ids %v, want %v", got.IDs, want)
	}
}
