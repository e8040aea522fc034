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
// (Config.MaxMessages). Listen bounds connections per client address
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
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
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

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url", "unknown URL %s %s", r.Method, r.URL.Path))
}

// logged logs each request through the Logger when it has been answered.
// A handler's panic (a vkllm bug) is logged with its stack and answered
// 500, or, when the answer had begun, ends the connection.
func (s *Server) logged(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{id: requestID(r.Header.Get("X-Request-Id")), start: start}
		w.Header().Set("X-Request-Id", info.id)
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		rec := &recorder{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.cfg.Logf("panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
			if rec.status != 0 {
				panic(http.ErrAbortHandler)
			}
			writeError(rec, newError(http.StatusInternalServerError, "server_error", "internal_error",
				"internal error (a vkllm bug; the server log has its stack)"))
		}()
		defer func() {
			status := rec.status
			switch {
			case status == 0 && r.Context().Err() != nil:
				status = clientGone.Status // nothing was answered: the client went away
			case status == 0:
				status = http.StatusOK
			}
			attrs := append([]slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", time.Since(start)), slog.String("remote", r.RemoteAddr)}, info.attrs()...)
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		if checkReserve(rec, r) || s.checkHost(rec, r) {
			return
		}
		h(rec, r)
	})
}

// recorder notes the status and size of an answer. Unwrap lets
// http.ResponseController reach the writer's Flush.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// api wraps a /v1/ handler: method (HEAD too where GET is served), API
// key, and a body limit that refuses a declared Content-Length above it
// at once (before "100 Continue" is sent).
func (s *Server) api(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			allow := method
			if method == http.MethodGet {
				allow = "GET, HEAD"
			}
			w.Header().Set("Allow", allow)
			writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
				"%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		if keys := s.cfg.Keys; keys != nil {
			key, ok := s.authorized(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="vkllm"`)
				if r.ContentLength != 0 {
					dropBody(w)
				}
				writeError(w, newError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
					"missing or wrong API key; send Authorization: Bearer KEY"))
				return
			}
			info := infoOf(r.Context())
			info.keyID = key.ID
			hdr, refused := keys.admit(key)
			for k, v := range hdr {
				w.Header()[k] = v
			}
			if refused != nil {
				if r.ContentLength != 0 {
					dropBody(w)
				}
				writeError(w, refused.error(key))
				return
			}
			info.charge = func(n int) { keys.charge(key, n) }
			defer func() { keys.release(key, info.uncharged()) }()
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			dropBody(w)
			writeError(w, tooLarge(s.cfg.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		h(w, r)
	}
}

// resolve finds the model and LoRA adapter of a request: "NAME:ADAPTER"
// names an adapter of a loaded model NAME (the first file registered
// under it that has one of that name); anything else is lookup's, with
// no adapter.
func (s *Server) resolve(name string) (m *Model, label, adapter string, e *apiError) {
	if base, a, ok := strings.Cut(name, ":"); ok {
		for _, x := range s.entries {
			if x.spec.Name == base && isReady(x) && x.m != nil && slices.Contains(x.m.Adapters, a) {
				return x.m, s.label(x), a, nil
			}
		}
	}
	m, label, e = s.lookup(name)
	return m, label, "", e
}

// post is a POST handler given the request's body (see readBody).
func (s *Server) post(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return s.api(http.MethodPost, func(w http.ResponseWriter, r *http.Request) {
		body, e := s.readBody(w, r)
		if e != nil {
			if e != clientGone {
				writeError(w, e)
			}
			return
		}
		h(w, r, body)
	})
}

// authorized is the key r carries as "Authorization: Bearer KEY", and
// whether it is one of Config.Keys; the scheme is matched without regard
// to case (RFC 7235).
func (s *Server) authorized(r *http.Request) (Key, bool) {
	scheme, got, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Key{}, false
	}
	return s.cfg.Keys.find(strings.TrimSpace(got))
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
		e := newError(http.StatusServiceUnavailable, "server_error", "model_unavailable", "the model %q failed to load; the server log says why", name)
		return nil, "", e
	}
	return found.m, s.label(found), nil
}

// label names an entry in metrics and /health by its API name: NAME,
// as requests name it, when it is the only file of that name, else
// NAME:QUANT, with "#k" added when several files would have the same
// label.
func (s *Server) label(e *entry) string {
	shared := 0
	for _, x := range s.entries {
		if x.spec.Name == e.spec.Name {
			shared++
		}
	}
	base := func(x *entry) string {
		if shared > 1 && isReady(x) && x.m != nil && x.m.Quant != "" { // x.m is written by the loader until ready closes
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

// modelCard is an entry of GET /v1/models. MaxModelLen is the most
// tokens one request may hold, prompt and completion together (vLLM's
// max_model_len); it is left out when the model's Generator does not say.
// Root is the NAME the model was served under, so that NAME and
// NAME:QUANT read as one model; Parent, as vLLM's LoRA cards, is the
// NAME a NAME:ADAPTER applies to.
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      string `json:"parent,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}

// newModelCard is the card of model m, served as root, listed as id and
// loaded at at.
func newModelCard(id, root string, m *Model, at time.Time) modelCard {
	c := modelCard{ID: id, Object: "model", Created: at.Unix(), OwnedBy: "vkllm", Root: root}
	if a, ok := strings.CutPrefix(id, root+":"); ok && slices.Contains(m.Adapters, a) {
		c.Parent = root
	}
	c.MaxModelLen = m.Gen.MaxLen()
	return c
}

// handleModels lists the loaded models: NAME for each name, NAME:QUANT
// for each file whose quantisation is known and NAME:ADAPTER for each
// LoRA adapter.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	list := []modelCard{}
	seen := map[string]bool{}
	add := func(id string, e *entry) {
		if !seen[id] {
			seen[id] = true
			list = append(list, newModelCard(id, e.spec.Name, e.m, e.at))
		}
	}
	for _, e := range s.entries {
		if !isReady(e) || e.m == nil {
			continue
		}
		add(e.spec.Name, e)
		if e.m.Quant != "" {
			add(e.spec.Name+":"+e.m.Quant, e)
		}
		for _, a := range e.m.Adapters {
			add(e.spec.Name+":"+a, e)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

// handleHealth is 200 when every model is loaded, 503 while one is
// loading or failed. It names each model and its state only ("loading",
// "ready", "failed"): file paths and load errors go to the log.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET"))
		return
	}
	status := map[string]string{}
	code := http.StatusOK
	for _, e := range s.entries {
		key := s.label(e)
		switch {
		case !isReady(e):
			status[key] = "loading"
			code = http.StatusServiceUnavailable
		case e.err != nil:
			status[key] = "failed"
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

// ClearCache frees the retained K/V (cached prefixes, idle sessions) of
// the named model, when its generator keeps any.
func (s *Server) ClearCache(name string) error {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			return e.m.Gen.ClearCache()
		}
	}
	return nil
}

// Stats is the engine.Stats of the first loaded file registered under name
// (zero when none is loaded).
func (s *Server) Stats(name string) engine.Stats {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			return e.m.Gen.Stats()
		}
	}
	return engine.Stats{}
}
