package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestGenerateJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--model", "../../testdata/models/qwen2-tiny", "--prompt", "Hello world",
		"--max-tokens", "5", "--top-logprobs", "3", "--ignore-eos", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.PromptTokens) == 0 || len(r.Tokens) != 5 || len(r.TopLogprobs) != 5 || len(r.TopLogprobs[0]) != 3 {
		t.Fatalf("%+v", r)
	}
	if r.TopLogprobs[0][0].ID != r.Tokens[0] {
		t.Errorf("greedy token %d is not the top logprob %d", r.Tokens[0], r.TopLogprobs[0][0].ID)
	}
	// The same prompt given as ids gives the same tokens.
	ids := make([]string, len(r.PromptTokens))
	for i, id := range r.PromptTokens {
		ids[i] = itoa(int(id))
	}
	var out2 bytes.Buffer
	if code := run(context.Background(), []string{"--model", "../../testdata/models/qwen2-tiny", "--tokens", strings.Join(ids, ","),
		"--max-tokens", "5", "--ignore-eos", "--json"}, &out2, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var r2 Result
	json.Unmarshal(out2.Bytes(), &r2)
	for i := range r.Tokens {
		if r.Tokens[i] != r2.Tokens[i] {
			t.Fatalf("--tokens gave %v, --prompt %v", r2.Tokens, r.Tokens)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestGenerateErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--tokens", "1"},
		{"--model", "../../testdata/models/qwen2-tiny"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "1,x"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "999999"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "1", "--top-logprobs", "21"},
		{"--model", "/nonexistent", "--tokens", "1"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
