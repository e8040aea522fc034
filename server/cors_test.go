package server

import (
	"net/http"
	"testing"
)

// TestCORS: CORS is off by default; with Config.CORSOrigins a listed
// origin's preflight is answered 204 (before the key check) and its
// answers carry Access-Control-Allow-Origin; another origin gets none.
func TestCORS(t *testing.T) {
	const app, other = "https://app.example", "https://evil.example"
	chat := `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
	off := newTestServer(t, Config{})
	off.waitLoaded()
	if _, h, _ := off.do("POST", "/v1/chat/completions", "application/json", chat, "Origin", app); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS on by default: %v", h)
	}

	ts := newTestServer(t, Config{APIKey: "k", CORSOrigins: []string{app}})
	ts.waitLoaded()
	status, h, b := ts.do("OPTIONS", "/v1/chat/completions", "", "", "Origin", app,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	if status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app ||
		h.Get("Access-Control-Allow-Methods") == "" || h.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("preflight: %d %v %s", status, h, b)
	}
	status, h, b = ts.do("POST", "/v1/chat/completions", "application/json", chat, "Origin", app, "Authorization", "Bearer k")
	if status != http.StatusOK || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("request: %d %v %s", status, h, b)
	}
	status, h, _ = ts.do("POST", "/v1/chat/completions", "application/json", chat, "Origin", app)
	if status != http.StatusUnauthorized || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("without the key: %d %v, want 401 the page can read", status, h)
	}
	status, h, _ = ts.do("OPTIONS", "/v1/chat/completions", "", "", "Origin", other, "Access-Control-Request-Method", "POST")
	if h.Get("Access-Control-Allow-Origin") != "" || status == http.StatusNoContent {
		t.Errorf("another origin's preflight: %d %v", status, h)
	}
}
