package benchcmd

import (
	"bytes"
	"io"
	"testing"
)

// TestSpec runs --draft's measurement on a tiny model (whose 256
// positions take a short text): both sides measured, the speedup their
// ratio, no draft kept by the always-missing source.
func TestSpec(t *testing.T) {
	for _, draft := range []string{"ngram", "miss", "../../../testdata/models/qwen2-tiny-Q4_0.gguf"} {
		t.Run(draft, func(t *testing.T) {
			r, err := benchSpec("../../../testdata/models/qwen2-tiny", "cpu", 2, draft, 4, 24, 2, "the cat sat on the mat, the cat sat", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if r.PlainTPS <= 0 || r.DraftTPS <= 0 || len(r.PlainRuns) != 2 || len(r.DraftRuns) != 2 || r.Tokens != 24 || r.Prompt < 20 {
				t.Fatalf("%+v", r)
			}
			if r.CacheHits != 0 {
				t.Errorf("%d runs were replayed from the inference cache: the rates are not the model's", r.CacheHits)
			}
			if d := r.Speedup - r.DraftTPS/r.PlainTPS; d > 1e-9 || d < -1e-9 {
				t.Errorf("speedup %v, rates %v and %v", r.Speedup, r.DraftTPS, r.PlainTPS)
			}
			if draft == "miss" && r.Acceptance != 0 || r.Acceptance < 0 || r.Acceptance > 1 {
				t.Errorf("acceptance %v", r.Acceptance)
			}
		})
	}
	var out, errs bytes.Buffer
	if rc := Run(t.Context(), []string{"--model", "x", "--draft", "ngram", "--draft-max", "0"}, &out, &errs); rc != 2 {
		t.Errorf("--draft-max 0: rc %d, want 2", rc)
	}
}
