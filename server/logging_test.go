package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// logCapture is a slog.Handler that keeps every record as one line,
// "LEVEL message key=value …", the message unquoted (a stack stays
// readable).
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, b.String())
	return nil
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// TestRegister mounts the server on a mux that has routes of its own:
// both answer, an unknown /v1/ URL gets the OpenAI 404, other URLs stay
// the mux's, and each request of the server is logged with its status.
func TestRegister(t *testing.T) {
	logged := &logCapture{}
	srv, err := New(Config{Models: []Spec{{Name: "tiny", Path: tinyDir}}, Engine: tinyOptions(), Logger: slog.New(logged)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	ts := &testServer{t: t, srv: srv, hs: hs, tr: &http.Transport{}}
	defer ts.tr.CloseIdleConnections()
	ts.waitLoaded()
	client := &http.Client{Transport: ts.tr}

	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/hello", 200, "hello"},
		{"/v1/models", 200, `"id":"tiny"`},
		{"/health", 200, `"status":"ok"`},
		{"/metrics", 200, "vllm:"},
		{"/v1/nope", 404, `"code":"unknown_url"`},
		{"/elsewhere", 404, "404 page not found"}, // the mux's own answer
	} {
		resp, err := client.Get(hs.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.body) {
			t.Errorf("GET %s: %d %q, want %d with %q", c.path, resp.StatusCode, b, c.status, c.body)
		}
	}
	log := logged.String()
	for _, want := range []string{
		"INFO model loaded model=tiny path=" + tinyDir,
		"INFO request method=GET path=/v1/models status=200",
		"INFO request method=GET path=/v1/nope status=404",
		"INFO request method=GET path=/health status=200",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "path=/hello") {
		t.Errorf("the mux's own route was logged by the server:\n%s", log)
	}
}

// TestCloseCancelsLoad: Close during a model's load stops it between two
// weights; the load ends with an error wrapping context.Canceled.
func TestCloseCancelsLoad(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	logged := &logCapture{}
	srv, err := New(Config{Models: []Spec{{Name: "tiny", Path: tinyDir}}, Engine: tinyOptions(), Logger: slog.New(logged),
		Progress: func(m Spec, done, total int64) {
			if m.Name != "tiny" || done <= 0 || done > total {
				t.Errorf("progress %v %d/%d", m, done, total)
			}
			once.Do(func() { close(started); <-release })
		}})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	for srv.loadCtx.Err() == nil { // Close cancels the load before it waits for it
		runtime.Gosched()
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	err = srv.WaitLoaded(context.Background())
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "model tiny") {
		t.Fatalf("WaitLoaded: %v; want the model's load cancelled", err)
	}
	if log := logged.String(); !strings.Contains(log, "ERROR model failed to load model=tiny") || !strings.Contains(log, "cancelled") {
		t.Errorf("log:\n%s", log)
	}
}
