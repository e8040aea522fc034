package server

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"

	"github.com/vkllm/vkllm/tokenizer"
)

// TestDraftSameText: a model served with speculative decoding (engine
// Options.Draft: prompt lookup or a draft model) answers a greedy
// completion with the text it gives without drafts, and /metrics counts
// the drafts scored and kept under vLLM's spec_decode names.
func TestDraftSameText(t *testing.T) {
	const body = `{"model":"tiny","prompt":"one two three one two three one two","max_tokens":40,"temperature":0,"ignore_eos":true}`
	complete := func(ts *testServer) string {
		t.Helper()
		code, _, b := ts.do("POST", "/v1/completions", "application/json", body)
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || code != 200 || len(r.Choices) != 1 {
			t.Fatalf("%d %s (%v)", code, b, err)
		}
		return r.Choices[0].Text
	}
	base := newTestServer(t, Config{})
	base.waitLoaded()
	want := complete(base)
	for _, c := range []struct{ name, draft string }{
		{"ngram", "ngram"},
		{"model", "../testdata/models/qwen2-tiny-Q4_0.gguf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := tinyOptions()
			opts.Draft, opts.DraftMax = c.draft, 4
			open := func(sp Spec) (*Model, error) { return OpenModel(t.Context(), sp.Path, opts) }
			ts := newTestServer(t, Config{Open: open})
			ts.waitLoaded()
			if got := complete(ts); got != want {
				t.Errorf("text %q, %q without drafts", got, want)
			}
			st := ts.gen().Stats()
			if st.DraftTokens == 0 || st.DraftAccepted == 0 {
				t.Fatalf("%d draft tokens scored, %d kept; want some of each", st.DraftTokens, st.DraftAccepted)
			}
			_, _, b := ts.do("GET", "/metrics", "", "")
			for name, v := range map[string]uint64{
				"vllm:spec_decode_num_draft_tokens_total":    st.DraftTokens,
				"vllm:spec_decode_num_accepted_tokens_total": st.DraftAccepted,
			} {
				m := regexp.MustCompile(`(?m)^` + name + `\{model_name="tiny"\} (\d+)$`).FindSubmatch(b)
				if m == nil {
					t.Errorf("metrics lack %s:\n%s", name, b)
				} else if n, _ := strconv.ParseUint(string(m[1]), 10, 64); n != v {
					t.Errorf("%s %d, engine stats %d", name, n, v)
				}
			}
		})
	}
}

// TestModelsMaxLen: every entry of GET /v1/models and the card of GET
// /v1/models/{id} carry max_model_len, the most tokens one request may
// hold (the tiny model's 256 positions, under its 1024-cell context); a
// Generator that does not say leaves it out.
func TestModelsMaxLen(t *testing.T) {
	type card struct {
		ID          string `json:"id"`
		MaxModelLen *int   `json:"max_model_len"`
	}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "tiny", Path: "../testdata/models/qwen2-tiny-Q4_1.gguf"}}})
	ts.waitLoaded()
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	fake := newTestServer(t, Config{Open: func(Spec) (*Model, error) { return &Model{Gen: &fakeGen{tok: tok, reply: "x"}}, nil }})
	fake.waitLoaded()
	for _, c := range []struct {
		name string
		ts   *testServer
		want []int // max_model_len of each card; -1: none
	}{
		{"engine", ts, []int{256, 256}},
		{"fake", fake, []int{-1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, b := c.ts.do("GET", "/v1/models", "", "")
			var list struct{ Data []card }
			if err := json.Unmarshal(b, &list); err != nil || code != 200 || len(list.Data) != len(c.want) {
				t.Fatalf("%d %s (%v); want %d cards", code, b, err, len(c.want))
			}
			for i, m := range list.Data {
				var one card
				code, _, b := c.ts.do("GET", "/v1/models/"+m.ID, "", "")
				if err := json.Unmarshal(b, &one); err != nil || code != 200 {
					t.Fatalf("%s: %d %s (%v)", m.ID, code, b, err)
				}
				for _, got := range []card{m, one} {
					switch {
					case c.want[i] < 0 && got.MaxModelLen != nil:
						t.Errorf("%s: max_model_len %d, want none", m.ID, *got.MaxModelLen)
					case c.want[i] >= 0 && (got.MaxModelLen == nil || *got.MaxModelLen != c.want[i]):
						t.Errorf("%s: max_model_len %v, want %d", m.ID, got.MaxModelLen, c.want[i])
					}
				}
			}
		})
	}
}
