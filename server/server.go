// Package server is vkllm's OpenAI-compatible HTTP server: the handlers of
// /v1/chat/completions, /v1/completions, /v1/models, /health and /metrics
// over one or more models loaded with engine.Open.
//
// Layout:
//
//	server.go      Server: the model registry, background loading, routing,
//	               API key, body limit, Close
//	api.go         request bodies and their validation into sampler.Params
//	generate.go    running the n choices of a request (one engine stream
//	               each) and turning their deltas into events
//	chat.go        POST /v1/chat/completions (tools and tool calls too)
//	toolstream.go  reading Hermes tool calls as they stream (callParser)
//	toolgrammar.go the constraint that forces a tool call (tool_choice
//	               required or a named function)
//	completions.go POST /v1/completions
//	sse.go         the text/event-stream writer
//	metrics.go     Prometheus metrics under vLLM's names
//	models.go      opening a model file, its quantisation and tool format
//	errors.go      errors in OpenAI's shape and the engine's errors mapped
//	               to HTTP statuses
package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Generator is what the server needs of a model; *engine.LLM is one.
type Generator interface {
	// The Stream calls run one request; with engine.WithChoices its
	// choices share one prefill and their Deltas carry their Index.
	Stream(ctx context.Context, prompt string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	StreamTokens(ctx context.Context, prompt []int32, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	Stats() engine.Stats
	Tokenizer() *tokenizer.Tokenizer
	Close() error
}

// Model is a loaded model as the server serves it.
type Model struct {
	Gen Generator
	// Quant is the GGUF quantisation ("Q4_1", "F16", …), "" when unknown.
	Quant string
	// ToolFormat is how the model writes tool calls (from its chat
	// template); FormatNone means the template knows no tools and the
	// server describes them itself in the Hermes format and parses that.
	ToolFormat chat.Format

	vocabOnce  sync.Once
	vocabBytes *vocab // see vocab
}

// Spec is one --model NAME=PATH.
type Spec struct{ Name, Path string }

// Config configures a Server.
type Config struct {
	Models []Spec
	// Open loads one model (default: OpenModel with Engine).
	Open func(Spec) (*Model, error)
	// Engine are the engine.Options of the default Open.
	Engine engine.Options
	// APIKey, when set, is required as "Authorization: Bearer KEY" on /v1/.
	APIKey string
	// MaxBodyBytes bounds a request body (default 4 MiB); a bigger one is
	// answered 413.
	MaxBodyBytes int64
	// Logf logs load errors and internal errors (answers 500; a panic in
	// the forward pass with its stack) (default: nothing).
	Logf func(format string, args ...any)
}

// entry is one registered model file.
type entry struct {
	spec  Spec
	ready chan struct{} // closed when loading ended
	m     *Model        // set before ready is closed (nil on error)
	err   error
	at    time.Time
}

// Server serves the registered models over HTTP.
type Server struct {
	cfg     Config
	entries []*entry
	mux     *http.ServeMux
	metrics *metrics

	loadCtx    context.Context
	cancelLoad context.CancelFunc
	loaded     chan struct{} // closed when every model loaded or failed

	closeOnce sync.Once
	closeErr  error
}

// New registers the models and starts loading them in the background.
// Until a model is loaded its requests get 503 and /health reports 503.
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		return nil, fmt.Errorf("server: no models")
	}
	if cfg.Open == nil {
		opts := cfg.Engine
		cfg.Open = func(s Spec) (*Model, error) { return OpenModel(s.Path, opts) }
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, loaded: make(chan struct{})}
	for _, sp := range cfg.Models {
		if sp.Name == "" || strings.Contains(sp.Name, ":") {
			return nil, fmt.Errorf("server: model name %q must be non-empty and without ':'", sp.Name)
		}
		s.entries = append(s.entries, &entry{spec: sp, ready: make(chan struct{})})
	}
	s.loadCtx, s.cancelLoad = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	s.routes()
	go s.load()
	return s, nil
}

// load opens the models one after the other (they share the CPU).
func (s *Server) load() {
	defer close(s.loaded)
	for _, e := range s.entries {
		if s.loadCtx.Err() != nil {
			e.err = engine.ErrClosed
			close(e.ready)
			continue
		}
		m, err := s.cfg.Open(e.spec)
		if err != nil {
			s.cfg.Logf("model %s (%s): %v", e.spec.Name, e.spec.Path, err)
		} else if b, ok := m.Gen.(interface{ Model() *models.Model }); ok {
			s.cfg.Logf("model %s loaded on %s", e.spec.Name, kernels.Describe(b.Model().Backend()))
		}
		e.m, e.err, e.at = m, err, time.Now()
		close(e.ready)
	}
}

// WaitLoaded blocks until every model has loaded or failed, or ctx is done.
func (s *Server) WaitLoaded(ctx context.Context) error {
	select {
	case <-s.loaded:
		for _, e := range s.entries {
			if e.err != nil {
				return fmt.Errorf("model %s: %w", e.spec.Name, e.err)
			}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops loading and closes every model; requests still running end
// with an error. Shut the http.Server down first to let streams finish.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.cancelLoad()
		<-s.loaded
		for _, e := range s.entries {
			if e.m != nil {
				if err := e.m.Gen.Close(); err != nil && s.closeErr == nil {
					s.closeErr = err
				}
			}
		}
	})
	return s.closeErr
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Registry is the Prometheus registry behind /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/chat/completions", s.api(http.MethodPost, s.handleChat))
	s.mux.HandleFunc("/v1/completions", s.api(http.MethodPost, s.handleCompletions))
	s.mux.HandleFunc("/v1/models", s.api(http.MethodGet, s.handleModels))
	s.mux.HandleFunc("/health", s.handleHealth)
	s.mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url", "unknown URL %s %s", r.Method, r.URL.Path))
	})
}

// api wraps a /v1/ handler: method, API key, body limit.
func (s *Server) api(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
				"%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		if s.cfg.APIKey != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.APIKey)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="vkllm"`)
				writeError(w, newError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
					"missing or wrong API key; send Authorization: Bearer KEY"))
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		h(w, r)
	}
}

// lookup finds the model of a request: "NAME" (the first file registered
// under it) or "NAME:QUANT" (the file of that quantisation).
func (s *Server) lookup(name string) (*Model, string, *apiError) {
	if name == "" {
		return nil, "", badParam("model", "model is required")
	}
	base, quant, hasQuant := strings.Cut(name, ":")
	var found *entry
	known := false
	for _, e := range s.entries {
		if e.spec.Name != base {
			continue
		}
		known = true
		if !hasQuant {
			found = e
			break
		}
		select {
		case <-e.ready:
			if e.m != nil && strings.EqualFold(e.m.Quant, quant) {
				found = e
			}
		default:
		}
		if found != nil {
			break
		}
	}
	if found == nil && known && hasQuant {
		// Maybe a model under that name is still loading and is the one.
		for _, e := range s.entries {
			if e.spec.Name == base && !isReady(e) {
				return nil, "", loadingError(name)
			}
		}
	}
	if found == nil {
		e := newError(http.StatusNotFound, "invalid_request_error", "model_not_found", "the model %q does not exist; GET /v1/models lists them", name)
		e.Param = strp("model")
		return nil, "", e
	}
	if !isReady(found) {
		return nil, "", loadingError(name)
	}
	if found.err != nil {
		e := newError(http.StatusServiceUnavailable, "server_error", "model_unavailable", "the model %q failed to load: %v", name, found.err)
		return nil, "", e
	}
	return found.m, s.label(found), nil
}

// label names an entry in metrics: NAME:QUANT, with "#k" added when
// several files would have the same label.
func (s *Server) label(e *entry) string {
	base := func(x *entry) string {
		if x.m != nil && x.m.Quant != "" {
			return x.spec.Name + ":" + x.m.Quant
		}
		return x.spec.Name
	}
	l, k := base(e), 0
	for _, x := range s.entries {
		if base(x) == l {
			k++
		}
		if x == e {
			break
		}
	}
	if k > 1 {
		l += fmt.Sprintf("#%d", k)
	}
	return l
}

func isReady(e *entry) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

func loadingError(name string) *apiError {
	e := newError(http.StatusServiceUnavailable, "server_error", "model_loading", "the model %q is still loading; retry shortly", name)
	e.RetryAfter = 2
	return e
}

type modelCard struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// handleModels lists the loaded models: NAME for each name and
// NAME:QUANT for each file whose quantisation is known.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	list := []modelCard{}
	seen := map[string]bool{}
	add := func(id string, at time.Time) {
		if !seen[id] {
			seen[id] = true
			list = append(list, modelCard{ID: id, Object: "model", Created: at.Unix(), OwnedBy: "vkllm"})
		}
	}
	for _, e := range s.entries {
		if !isReady(e) || e.m == nil {
			continue
		}
		add(e.spec.Name, e.at)
		if e.m.Quant != "" {
			add(e.spec.Name+":"+e.m.Quant, e.at)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

// handleHealth is 200 when every model is loaded, 503 while one is
// loading or failed.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET"))
		return
	}
	status := map[string]string{}
	code := http.StatusOK
	for _, e := range s.entries {
		key := e.spec.Name + "=" + e.spec.Path
		switch {
		case !isReady(e):
			status[key] = "loading"
			code = http.StatusServiceUnavailable
		case e.err != nil:
			status[key] = "error: " + e.err.Error()
			code = http.StatusServiceUnavailable
		default:
			status[key] = "ready"
		}
	}
	overall := "ok"
	if code != http.StatusOK {
		overall = "unavailable"
	}
	writeJSON(w, code, map[string]any{"status": overall, "models": status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// loadedModels are the models loaded so far, in registration order.
func (s *Server) loadedModels() []namedModel {
	var out []namedModel
	for _, e := range s.entries {
		if isReady(e) && e.m != nil {
			out = append(out, namedModel{s.label(e), e.m})
		}
	}
	return out
}

type namedModel struct {
	name string
	m    *Model
}

// Stats is the engine.Stats of the first loaded file registered under name
// (zero when none is loaded).
// ClearCache frees the retained K/V (cached prefixes, idle sessions) of
// the named model, when its generator keeps any.
func (s *Server) ClearCache(name string) error {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			if c, ok := e.m.Gen.(interface{ ClearCache() error }); ok {
				return c.ClearCache()
			}
		}
	}
	return nil
}

func (s *Server) Stats(name string) engine.Stats {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			return e.m.Gen.Stats()
		}
	}
	return engine.Stats{}
}
