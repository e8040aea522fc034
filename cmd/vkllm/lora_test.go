package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

const tinyLoRA = "../../testdata/lora/qwen2-tiny-lora-a"

// TestRunLoRA: `run --lora` generates with the adapter (other tokens than
// the base model's, the same as the GGUF copy of the adapter), and a
// missing adapter is an error.
func TestRunLoRA(t *testing.T) {
	gen := func(extra ...string) (int, Result, string) {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"--model", "../../testdata/models/qwen2-tiny", "--prompt", "Hello world",
			"--max-tokens", "8", "--ignore-eos", "--json"}, extra...)
		code := runGen(context.Background(), args, &out, &errb)
		var r Result
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
		}
		return code, r, errb.String()
	}
	_, base, _ := gen()
	code, peft, errs := gen("--lora", tinyLoRA)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, gguf, _ := gen("--lora", tinyLoRA+"-F32.gguf")
	if slices.Equal(peft.Tokens, base.Tokens) || !slices.Equal(peft.Tokens, gguf.Tokens) {
		t.Fatalf("--lora tokens %v, base %v, GGUF adapter %v", peft.Tokens, base.Tokens, gguf.Tokens)
	}
	if code, _, errs := gen("--lora", "/nonexistent"); code != 1 || !strings.HasPrefix(lastLine(errs), "error: ") {
		t.Fatalf("missing adapter: exit %d, %q", code, errs)
	}
}

// TestServeLoRA: `serve --lora NAME=PATH` lists MODEL:NAME and answers
// requests for it; a malformed --lora is a usage error.
func TestServeLoRA(t *testing.T) {
	for _, bad := range [][]string{{"--lora", "x"}, {"--lora", "a:b=x"}, {"--lora", "a=x", "--lora", "a=y"}} {
		var errb bytes.Buffer
		if code := runServe(context.Background(), append([]string{"--model", "tiny=" + tinyDir}, bad...), &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, log, done := serveUntil(ctx, t, "--lora", "a="+tinyLoRA)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/models", "", `"id":"tiny:a"`},
		{"POST", "/v1/completions", `{"model":"tiny:a","max_tokens":3,"prompt":"hi"}`, `"completion_tokens":3`},
	} {
		// The model loads after the listener is up: ask until it answers.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			status, b := send(t, client, c.method, base+c.path, c.body)
			if status == 200 && strings.Contains(string(b), c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s: %d %s; want 200 with %s", c.method, c.path, status, b, c.want)
			}
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, log.String())
	}
}
