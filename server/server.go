// Package server is vkllm's OpenAI-compatible HTTP server over one or
// more models loaded with engine.Open: /v1/chat/completions,
// /v1/completions, /v1/responses, /v1/embeddings and /v1/models, vLLM's /tokenize and
// /detokenize, /health, /ready (readiness, Drain) and /metrics
// (Prometheus, under vLLM's names), and a chat page at /.
//
//	srv, err := server.New(server.Config{Models: []server.Spec{{Name: "m", Path: path}}})
//	defer srv.Close()
//	http.ListenAndServe(addr, srv.Handler()) // or srv.Register(mux) beside routes of one's own
//
// New starts loading the models in the background and returns at once;
// Handler is the whole server as an http.Handler, and Register mounts the
// same routes on a caller's http.ServeMux beside its own. Every request is
// logged through Config.Logger (log/slog) when it ends.
//
// The server maps JSON to the library's requests and the library's typed
// errors to HTTP statuses; it decides nothing the library could: a chat
// request is an engine.ChatRequest, planned by engine.LLM.StreamChat
// (tools, tool choice, response format, the prompt). A model is served
// through the Generator interface, which *engine.LLM implements.
//
// Hostile clients: a body is bounded in size (413 before it is read when
// its Content-Length is too big), in time (Config.BodyTimeout) and in
// how many are read at once (Config.MaxBodyReads); each streamed event
// has a write deadline (Config.WriteTimeout), so a client that stops
// reading gives its request up; a prompt too long for the context is
// refused before it is tokenised in full (see engine.LLM). Keys are
// matched exactly and once, and messages counted as a body is decoded
// (Config.MaxMessages). Listen bounds connections per client address,
// closes connections that sent nothing to make room for other clients,
// and keeps a reserve for /health and /ready. With API keys, tokens are
// charged as they are sent and each key has its own cache scope
// (Config.SharedCache); without, only the server's own names are
// answered as Host (Config.AllowedHosts). Clients see model names and
// states, never file paths or load errors (the log has them).
//
// Browsers: the server sends no CORS headers and answers no preflight,
// so a page of another origin cannot read its answers nor send it an
// application/json request; a request of any other Content-Type (what a
// cross-site "simple request" would send) is refused with 415 before any
// work. A page served by the same origin (the server's own, at /) needs
// none of this.
package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Generator is what the server needs of a model; *engine.LLM is one. A
// Generator that lacks a capability (tokenizing on request, embeddings)
// returns errors.ErrUnsupported from its methods, answered 400.
type Generator interface {
	// The Stream calls run one request; with engine.WithChoices its
	// choices share one prefill and their Deltas carry their Index.
	Stream(ctx context.Context, prompt string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	StreamTokens(ctx context.Context, prompt []int32, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
	Stats() engine.Stats
	// Tokenizer is the model's; a Generator without one (nil) fails
	// its load with engine.ErrNoTokenizer.
	Tokenizer() *tokenizer.Tokenizer
	// MaxPending bounds the requests queued at once (each prompt of a
	// completion is one); MaxLen is the most tokens of one request (0:
	// not said).
	MaxPending() int
	MaxLen() int
	// ClearCache frees the retained K/V (cached prefixes, idle sessions).
	ClearCache() error
	// Model and ToolFormat say what was loaded, for the log (Model: nil
	// when there is none).
	Model() *models.Model
	ToolFormat() chat.Format
	Tokenizing
	Embedder
	Close() error
}

// Model is a loaded model as the server serves it.
type Model struct {
	Gen Generator
	// Quant is the GGUF quantisation ("Q4_1", "F16", …), "" when unknown.
	Quant string
	// Adapters name the model's LoRA adapters (engine.Options.Adapters):
	// a request for "NAME:ADAPTER" runs with engine.WithAdapter(ADAPTER),
	// and /v1/models lists it.
	Adapters []string
}

// Spec is one --model NAME=PATH.
type Spec struct{ Name, Path string }

// Config configures a Server.
type Config struct {
	// Models are the model files to serve, loaded one after the other in
	// this order.
	Models []Spec
	// Open loads one model (default: OpenModel with Engine and Progress;
	// Close cancels a load in progress). A model without a tokenizer (a
	// "no_vocab" GGUF) fails its load with engine.ErrNoTokenizer.
	Open func(Spec) (*Model, error)
	// Engine are the engine.Options of the default Open.
	Engine engine.Options
	// Progress, when set, gets the load progress of each model of the
	// default Open (bytes of weights uploaded out of total; see
	// engine.Options.Progress). It replaces Engine.Progress.
	Progress func(m Spec, done, total int64)
	// APIKey, when set, is required as "Authorization: Bearer KEY" on /v1/
	// (and /tokenize, /detokenize), as the key of id "default" with no
	// limits. Keys, when set, replaces it.
	APIKey string
	// Keys are the API keys with their per-key limits (concurrent
	// requests, tokens per minute), answered 429 with Retry-After and
	// OpenAI's x-ratelimit-* headers; Keys.Set changes them while the
	// server runs.
	Keys *Keys
	// AllowedHosts are the names, beside IP literals and localhost, that
	// a server without an API key (neither APIKey nor Keys) answers as its
	// Host: a request for any other is refused (403 host_not_allowed), so
	// a web page cannot reach the server through DNS rebinding. An entry
	// ".example.com" allows that domain and its subdomains, "*" any Host
	// (behind a proxy that checks it). With a key, any Host is served.
	AllowedHosts []string
	// SharedCache lets API keys share the caches. By default, with keys
	// (APIKey or Keys), each key's requests reuse only that key's cached
	// prefixes and inference-cache answers, so one key cannot learn from
	// a fast answer or cached_tokens whether another sent a prompt; set
	// it when the keys trust each other (a long system prompt they all
	// send is then computed once). Without keys every request shares
	// both caches.
	SharedCache bool
	// CORSOrigins are the origins ("https://app.example.com") whose web
	// pages may call the API from a browser (CORS), "*" any; none by
	// default. A listed origin's preflight is answered 204 before the key
	// check; its requests still need a key when the server has one.
	CORSOrigins []string
	// MaxBodyBytes bounds a request body (default 4 MiB); a bigger one is
	// answered 413, at once when its Content-Length says so.
	MaxBodyBytes int64
	// BodyTimeout bounds the time from a request's arrival to the end of
	// its body (default 30 s); a body still missing then is answered 408.
	// Only the body's read has this deadline: a stream may last longer.
	BodyTimeout time.Duration
	// MaxBodyReads bounds the request bodies being read at once (default
	// 16); the memory held by bodies in transit is at most this many
	// times MaxBodyBytes. A request waits for its turn within BodyTimeout,
	// and is answered 503 when it does not get one.
	MaxBodyReads int
	// MaxMessages bounds the messages of a chat or /tokenize request
	// (default 2048, OpenAI's): they are counted as the body is decoded,
	// so a body of many tiny messages is refused (400, code
	// too_many_messages) before any is decoded or rendered.
	MaxMessages int
	// WriteTimeout bounds the write of each streamed event (default 30 s):
	// a client that stops reading its stream for longer loses it, and its
	// request is aborted.
	WriteTimeout time.Duration
	// LiteralContent tokenises chat message content as plain text, so
	// that special-token text in it ("<|im_end|>") cannot become a control
	// token; a request's "literal_content" field overrides it. Off by
	// default, as Hugging Face's and llama.cpp's chat templating.
	LiteralContent bool
	// Logger gets one Info record "request" per request when it ends
	// (method, path, status, bytes, duration, remote, request_id: the
	// client's X-Request-Id or a new one, sent back in X-Request-Id; and
	// when known key_id, never the key, model, prompt_tokens,
	// cached_tokens, completion_tokens, ttft, finish_reason: one per
	// choice, comma-separated), the models' loads (Info, or Error when one
	// fails) and internal errors (Error: the requests answered 500, a panic
	// in the forward pass with its stack). Default: nothing is logged.
	Logger *slog.Logger
	// LogPrompts adds each request's prompt (its messages, prompt or
	// input, as JSON) to its log record; off by default, so the log holds
	// no user text.
	LogPrompts bool
}

// settings is the Config with its defaults filled in.
type settings struct {
	Config
	// Logf logs an internal error through Logger at level Error.
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
	cfg     settings
	log     *slog.Logger
	entries []*entry
	handler http.Handler
	metrics *metrics

	bodySlots chan struct{} // one per body being read (MaxBodyReads)
	stopping  chan struct{} // closed by AbortStreams
	abortOnce sync.Once

	loadCtx    context.Context
	cancelLoad context.CancelFunc
	loaded     chan struct{} // closed when every model loaded or failed

	closeOnce sync.Once
	closeErr  error

	drain drainState // see ready.go

	responses responseStore // see responses.go
}

// Errors of New.
var (
	ErrNoModels  = errors.New("server: no models")
	ErrModelName = errors.New("server: a model name must be non-empty and without ':'")
)

// New registers the models and starts loading them in the background.
// Until a model is loaded its requests get 503 and /health reports 503.
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		return nil, ErrNoModels
	}
	s := &Server{cfg: settings{Config: cfg}, log: cfg.Logger, loaded: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.cfg.Logf = func(format string, args ...any) { s.log.Error(fmt.Sprintf(format, args...)) }
	if s.cfg.MaxBodyBytes == 0 {
		s.cfg.MaxBodyBytes = 4 << 20
	}
	if s.cfg.BodyTimeout == 0 {
		s.cfg.BodyTimeout = 30 * time.Second
	}
	if s.cfg.MaxBodyReads == 0 {
		s.cfg.MaxBodyReads = 16
	}
	if s.cfg.MaxMessages == 0 {
		s.cfg.MaxMessages = 2048
	}
	if s.cfg.WriteTimeout == 0 {
		s.cfg.WriteTimeout = 30 * time.Second
	}
	if s.cfg.Keys == nil && s.cfg.APIKey != "" {
		keys, err := NewKeys([]Key{{ID: "default", Secret: s.cfg.APIKey}})
		if err != nil {
			return nil, err
		}
		s.cfg.Keys = keys
	}
	s.bodySlots = make(chan struct{}, s.cfg.MaxBodyReads)
	s.stopping = make(chan struct{})
	for _, sp := range cfg.Models {
		if sp.Name == "" || strings.Contains(sp.Name, ":") {
			return nil, fmt.Errorf("%w: %q", ErrModelName, sp.Name)
		}
		s.entries = append(s.entries, &entry{spec: sp, ready: make(chan struct{})})
	}
	s.loadCtx, s.cancelLoad = context.WithCancel(context.Background())
	if s.cfg.Open == nil {
		s.cfg.Open = s.openDefault
	}
	s.metrics = newMetrics(s)
	mux := http.NewServeMux()
	s.Register(mux)
	mux.HandleFunc("/", s.notFound)
	s.handler = mux
	go s.load()
	return s, nil
}

// openDefault is Config.Open's default: OpenModel with Config.Engine,
// cancelled by Close.
func (s *Server) openDefault(sp Spec) (*Model, error) {
	opts := s.cfg.Engine
	if p := s.cfg.Progress; p != nil {
		opts.Progress = func(done, total int64) { p(sp, done, total) }
	}
	return OpenModel(s.loadCtx, sp.Path, opts)
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
		start := time.Now()
		m, err := s.cfg.Open(e.spec)
		if err == nil && m.Gen.Tokenizer() == nil { // a "no_vocab" model: the API speaks text
			m.Gen.Close()
			m, err = nil, fmt.Errorf("%w: the server needs one", engine.ErrNoTokenizer)
		}
		if err != nil {
			s.log.Error("model failed to load", "model", e.spec.Name, "path", e.spec.Path, "err", err)
		} else {
			attrs := []any{"model", e.spec.Name, "path", e.spec.Path, "quant", m.Quant,
				"took", time.Since(start).Round(time.Millisecond)}
			if mm := m.Gen.Model(); mm != nil {
				attrs = append(attrs, "backend", mm.DescribeBackend())
			}
			attrs = append(attrs, "tool_format", m.Gen.ToolFormat())
			s.log.Info("model loaded", attrs...)
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

// AbortStreams ends every request still running, and any that comes
// later: a stream gets an error event (code server_shutting_down) and
// [DONE], any other answer a 503. Call it when a graceful shutdown has
// waited long enough, then give the handlers a moment to write before
// closing the connections.
func (s *Server) AbortStreams() { s.abortOnce.Do(func() { close(s.stopping) }) }

// Handler is the whole server as an http.Handler: the routes of Register,
// and any other URL answered 404 in OpenAI's error shape.
func (s *Server) Handler() http.Handler { return s.handler }

// Register mounts the server's routes on mux, beside the caller's own:
// /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses
// (and GET, DELETE /v1/responses/{id}), /v1/models,
// /v1/models/{id}, /tokenize, /detokenize, /v1/ (any other /v1/ URL: 404
// in OpenAI's error shape), /health, /ready, /metrics, and the chat
// page at / with its icon and its assets under /web/ (see web.go). It panics,
// as http.ServeMux does, when mux already has one of these patterns.
func (s *Server) Register(mux *http.ServeMux) {
	handle := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.logged(s.cors(h))) }
	handle("/v1/chat/completions", s.post(s.handleChat))
	handle("/v1/completions", s.post(s.handleCompletions))
	handle("/v1/embeddings", s.post(s.handleEmbeddings))
	handle("/v1/responses", s.post(s.handleResponses))
	handle("/v1/responses/{id}", s.handleResponseByID)
	handle("/v1/models", s.api(http.MethodGet, s.handleModels))
	handle("/v1/models/{id}", s.api(http.MethodGet, s.handleModel))
	handle("/tokenize", s.post(s.handleTokenize))
	handle("/detokenize", s.post(s.handleDetokenize))
	handle("/v1/", s.notFound)
	handle("/health", s.handleHealth)
	handle("/ready", s.handleReady)
	handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP)
	web := webHandler()
	handle("/{$}", web.ServeHTTP)
	handle("/favicon.ico", web.ServeHTTP)
	handle("/web/", web.ServeHTTP)
}

// Registry is the Prometheus registry behind /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }
