package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAPINames: a response names the model as the request did, and the
// metrics' model_name is the name requests use (NAME for the only file
// of that name, NAME:QUANT only when several files share it).
func TestAPINames(t *testing.T) {
	ts := newTestServer(t, Config{Models: []Spec{{Name: "tiny", Path: "../testdata/models/qwen2-tiny-Q4_1.gguf"}}})
	ts.waitLoaded()
	for _, name := range []string{"tiny", "tiny:q4_1"} {
		status, _, b := ts.do("POST", "/v1/embeddings", "application/json", `{"model":"`+name+`","input":"hello"}`)
		var resp struct {
			Model string `json:"model"`
		}
		if status != http.StatusOK || json.Unmarshal(b, &resp) != nil || resp.Model != name {
			t.Errorf("embeddings of %q: %d, model %q (%s)", name, status, resp.Model, b)
		}
	}
	status, _, b := ts.do("POST", "/v1/completions", "application/json", `{"model":"tiny","prompt":"hi","max_tokens":2}`)
	if status != http.StatusOK {
		t.Fatalf("completion: %d %s", status, b)
	}
	_, _, b = ts.do("GET", "/metrics", "", "")
	for _, want := range []string{`vllm:e2e_request_latency_seconds_count{model_name="tiny"} 1`, `vllm:num_requests_running{model_name="tiny"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(b), `model_name="tiny:Q4_1"`) {
		t.Error(`metrics name the model "tiny:Q4_1", which no request used`)
	}
	_, _, b = ts.do("GET", "/health", "", "")
	if !strings.Contains(string(b), `"tiny":"ok"`) && !strings.Contains(string(b), `"tiny":"ready"`) {
		t.Errorf("health %s, want the model named tiny", b)
	}
}
