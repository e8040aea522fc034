package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestGenerateDraft: --draft ngram and --draft PATH give the greedy
// tokens of a run without, and report the drafts kept on stderr.
func TestGenerateDraft(t *testing.T) {
	const model = "../../testdata/models/qwen2-tiny"
	base := []string{"--model", model, "--prompt", "one two three one two three one two", "--max-tokens", "40", "--ignore-eos", "--json"}
	gen := func(extra ...string) (Result, string) {
		var out, errb bytes.Buffer
		if code := runGen(context.Background(), append(slices.Clone(base), extra...), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errb.String())
		}
		var r Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r, errb.String()
	}
	want, _ := gen()
	for _, draft := range [][]string{{"--draft", "ngram"}, {"--draft", "../../testdata/models/qwen2-tiny-Q4_0.gguf", "--draft-max", "3"}} {
		got, stderr := gen(draft...)
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("%v: tokens %v, %v without", draft, got.Tokens, want.Tokens)
		}
		if !strings.Contains(stderr, "drafts: ") {
			t.Errorf("%v: no drafts line on stderr:\n%s", draft, stderr)
		}
	}
	for _, bad := range [][]string{{"--draft-max", "4"}, {"--draft", "ngram", "--draft-max", "65"}} {
		var out, errb bytes.Buffer
		if code := runGen(context.Background(), append(slices.Clone(base), bad...), &out, &errb); code != 1 || !strings.Contains(errb.String(), "--draft-max") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and a --draft-max error", bad, code, errb.String())
		}
	}
}
