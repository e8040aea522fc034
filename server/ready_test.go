package server

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

// TestReady: /ready is 503 while the model loads, 200 once it is loaded,
// and 503 again from Drain on, while /health stays 200 and requests that
// still arrive are served. A model that failed to load keeps it 503.
func TestReady(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, Config{Open: func(s Spec) (*Model, error) {
		<-release
		return OpenModel(context.Background(), s.Path, tinyOptions())
	}})
	ready := func() (int, string) {
		t.Helper()
		code, _, b := ts.do("GET", "/ready", "", "")
		var v struct{ Status string }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("/ready body %q: %v", b, err)
		}
		return code, v.Status
	}
	check := func(when string, wantCode int, wantStatus string, healthCode int) {
		t.Helper()
		if code, st := ready(); code != wantCode || st != wantStatus {
			t.Errorf("%s: /ready %d %q, want %d %q", when, code, st, wantCode, wantStatus)
		}
		if code, _, _ := ts.do("GET", "/health", "", ""); code != healthCode {
			t.Errorf("%s: /health %d, want %d", when, code, healthCode)
		}
	}
	check("loading", 503, "loading", 503)
	close(release)
	ts.waitLoaded()
	check("loaded", 200, "ready", 200)
	if ts.srv.Draining() {
		t.Fatal("draining before Drain")
	}
	ts.srv.Drain()
	ts.srv.Drain() // twice is fine
	check("draining", 503, "draining", 200)
	if code, _, b := ts.do("HEAD", "/ready", "", ""); code != 503 || len(b) != 0 {
		t.Errorf("HEAD /ready while draining: %d %q", code, b)
	}
	code, _, b := ts.do("POST", "/v1/completions", "application/json", `{"model":"tiny","prompt":"hi","max_tokens":2}`)
	if code != 200 {
		t.Errorf("a request while draining: %d %s", code, b)
	}
	if code, _, _ := ts.do("POST", "/ready", "", ""); code != 405 {
		t.Errorf("POST /ready: %d, want 405", code)
	}
	ts.settle()
}

func TestReadyFailedModel(t *testing.T) {
	ts := newTestServer(t, Config{Open: func(Spec) (*Model, error) { return nil, errors.New("no such file") }})
	ts.srv.WaitLoaded(context.Background())
	if code, _, b := ts.do("GET", "/ready", "", ""); code != 503 || !regexp.MustCompile(`"unavailable"`).Match(b) {
		t.Errorf("/ready with a failed model: %d %s", code, b)
	}
}

// TestCacheConfigInfo: /metrics has vLLM's cache_config_info with the
// prefix cache's block size and the cells counted in such blocks.
func TestCacheConfigInfo(t *testing.T) {
	ts := newTestServer(t, Config{}) // 1024 cells
	ts.waitLoaded()
	_, _, body := ts.do("GET", "/metrics", "", "")
	re := regexp.MustCompile(`(?m)^vllm:cache_config_info\{block_size="16",model_name="tiny",num_gpu_blocks="64"\} 1$`)
	if !re.Match(body) {
		t.Fatalf("no cache_config_info line for 1024 cells in blocks of 16 in\n%s", body)
	}
}
