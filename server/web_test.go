package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestWebPage(t *testing.T) {
	ts := newTestServer(t, Config{})
	cases := []struct {
		method, path string
		status       int
		ctype        string // prefix
		body         string // a substring
	}{
		{"GET", "/", 200, "text/html", `<script type="module" src="/web/app.js">`},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/web/app.js", 200, "text/javascript", "renderMarkdown"},
		{"GET", "/web/markdown.js", 200, "text/javascript", "textContent"},
		{"GET", "/web/style.css", 200, "text/css", "prefers-color-scheme: dark"},
		{"GET", "/favicon.ico", 200, "image/", ""},
		{"POST", "/", 405, "application/json", "method_not_allowed"},
		{"GET", "/web/nope.js", 404, "", ""},
		{"GET", "/web/", 404, "application/json", "unknown_url"},
		{"GET", "/index.htm", 404, "application/json", "unknown_url"},
	}
	for _, c := range cases {
		t.Run(c.method+c.path, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, ts.hs.URL+c.path, nil)
			resp, err := ts.hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
				t.Errorf("Content-Type %q, want %q…", ct, c.ctype)
			}
			if !strings.Contains(string(b), c.body) {
				t.Errorf("body lacks %q:\n%.300s", c.body, b)
			}
			if c.status == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("no script-src 'self' in CSP %q", resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
}

// TestWebNeedsNoKey checks that the page itself loads without the API
// key (it asks for it), while the API still refuses without one.
func TestWebNeedsNoKey(t *testing.T) {
	ts := newTestServer(t, Config{APIKey: "sekret"})
	for path, want := range map[string]int{"/": 200, "/web/app.js": 200, "/v1/models": 401} {
		resp, err := ts.hs.Client().Get(ts.hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
