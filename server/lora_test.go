package server

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
)

// TestLoRAModels: adapters given to the engine are listed in /v1/models
// as NAME:ADAPTER, a request for NAME:ADAPTER runs that adapter (the
// engine's output with engine.WithAdapter, not the base model's), an
// unknown adapter is a 404, and /metrics has vLLM's lora_requests_info.
func TestLoRAModels(t *testing.T) {
	opts := tinyOptions()
	opts.Adapters = map[string]string{"a": "../testdata/lora/qwen2-tiny-lora-a", "b": "../testdata/lora/qwen2-tiny-lora-b"}
	ts := newTestServer(t, Config{Open: func(s Spec) (*Model, error) { return OpenModel(context.Background(), s.Path, opts) }})
	ts.waitLoaded()

	code, _, body := ts.do("GET", "/v1/models", "", "")
	var list struct {
		Data []struct{ ID, Root, Parent string }
	}
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("/v1/models: %d %v %s", code, err, body)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		// The page shows NAME:QUANT as NAME (the same model) but an adapter
		// as a model of its own: parent tells them apart, as in vLLM.
		wantParent := ""
		if m.ID == "tiny:a" || m.ID == "tiny:b" {
			wantParent = "tiny"
		}
		if m.Root != "tiny" || m.Parent != wantParent {
			t.Errorf("/v1/models card %s: root %q parent %q, want tiny and %q", m.ID, m.Root, m.Parent, wantParent)
		}
	}
	for _, want := range []string{"tiny", "tiny:a", "tiny:b"} {
		if !slices.Contains(ids, want) {
			t.Errorf("/v1/models lists %v, not %q", ids, want)
		}
	}

	complete := func(model string) (int, string) {
		t.Helper()
		code, _, b := ts.do("POST", "/v1/completions", "application/json",
			`{"model":"`+model+`","prompt":"The quick brown fox","max_tokens":12,"temperature":0,"ignore_eos":true}`)
		var r struct{ Choices []struct{ Text string } }
		if code == 200 {
			if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
				t.Fatalf("%s: %v %s", model, err, b)
			}
			return code, r.Choices[0].Text
		}
		return code, string(b)
	}
	direct := func(adapter string) string {
		t.Helper()
		var text strings.Builder
		for d, err := range ts.gen().Stream(context.Background(), "The quick brown fox",
			sampler.Params{MaxTokens: 12, IgnoreEOS: true}, engine.WithAdapter(adapter)) {
			if err != nil {
				t.Fatal(err)
			}
			text.WriteString(d.TextDelta)
		}
		return text.String()
	}
	_, base := complete("tiny")
	for _, a := range []string{"a", "b"} {
		code, got := complete("tiny:" + a)
		if code != 200 || got != direct(a) || got == base {
			t.Fatalf("tiny:%s: %d %q; with the adapter %q, base %q", a, code, got, direct(a), base)
		}
	}
	if code, b := complete("tiny:nope"); code != 404 || !strings.Contains(b, "model_not_found") {
		t.Fatalf("tiny:nope: %d %s", code, b)
	}

	ts.settle()
	code, _, body = ts.do("GET", "/metrics", "", "")
	re := regexp.MustCompile(`(?m)^vllm:lora_requests_info\{max_lora="2",model_name="tiny",running_lora_adapters="",waiting_lora_adapters=""\} [0-9.e+]+$`)
	if code != 200 || !re.Match(body) {
		t.Fatalf("/metrics: %d, no idle lora_requests_info line in\n%s", code, body)
	}
}

// TestLoRAMetricAbsentWithoutAdapters: a model without adapters has no
// lora_requests_info (as vLLM without LoRA).
func TestLoRAMetricAbsentWithoutAdapters(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	if _, _, body := ts.do("GET", "/metrics", "", ""); strings.Contains(string(body), "lora_requests_info{") {
		t.Fatal("lora_requests_info without adapters")
	}
}
