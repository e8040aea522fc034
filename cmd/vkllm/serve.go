package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/internal/runinfo"
	"github.com/vkllm/vkllm/server"
)

type modelFlags []server.Spec

func (m *modelFlags) String() string { return fmt.Sprint(*m) }
func (m *modelFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" || strings.Contains(name, ":") {
		return errors.New("want NAME=PATH (NAME without ':')")
	}
	*m = append(*m, server.Spec{Name: name, Path: path})
	return nil
}

// loraFlags are the --lora NAME=PATH of serve.
type loraFlags map[string]string

func (l *loraFlags) String() string { return fmt.Sprint(map[string]string(*l)) }
func (l *loraFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" || strings.Contains(name, ":") {
		return errors.New("want NAME=PATH (NAME without ':')")
	}
	if _, dup := (*l)[name]; dup {
		return fmt.Errorf("adapter %q given twice", name)
	}
	if *l == nil {
		*l = loraFlags{}
	}
	(*l)[name] = path
	return nil
}

// serve is `vkllm serve`: the server package on a listener.
//
// Endpoints: POST /v1/chat/completions, POST /v1/completions, GET
// /v1/models, GET /health (503 until every model is loaded), GET /ready
// (503 while loading and once draining), GET /metrics (Prometheus, vLLM's
// metric names). Models load in the background after the listener is up.
// SIGINT or SIGTERM turns /ready to 503, stops accepting connections, lets
// running requests finish (at most --drain), then closes the models. The
// log (slog's text format) goes to stderr, one record per request.
func serve(ctx context.Context, e env, args []string) int {
	var (
		specs   modelFlags
		loras   loraFlags
		addr    string
		apiKey  string
		maxSeqs int
		ctxLen  int
		pending int
		drain   time.Duration
		quiet   bool
	)
	fs := newFlags(e, "serve")
	fs.Var(&specs, "model", "NAME=PATH of a model folder or .gguf file (repeatable; several files under one NAME are told apart as NAME:QUANT)")
	fs.Var(&loras, "lora", "NAME=PATH of a LoRA adapter (a PEFT folder or a llama.cpp GGUF LoRA file) for every model; request it as model \"MODEL:NAME\" (repeatable)")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&apiKey, "api-key", os.Getenv("VKLLM_API_KEY"), "require Authorization: Bearer KEY on /v1/ (default $VKLLM_API_KEY)")
	backendName := runinfo.BackendFlag(fs)
	fs.IntVar(&maxSeqs, "max-seqs", 16, "requests running at once per model")
	fs.IntVar(&ctxLen, "ctx", 0, "KV cells per model, shared by its requests (0: min(model positions, 4096))")
	fs.IntVar(&pending, "max-pending", 256, "requests queued or running per model; more get 429")
	fs.DurationVar(&drain, "drain", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	fs.BoolVar(&quiet, "quiet", false, "do not log each request")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if len(specs) == 0 {
		return fail(errors.New("give at least one --model NAME=PATH"))
	}
	if err := runinfo.CheckBackend(*backendName); err != nil {
		return fail(err)
	}
	reqLogger := logger
	if quiet {
		reqLogger = slog.New(&dropRequests{logger.Handler()})
	}
	bars := loadBars(e)
	srv, err := server.New(server.Config{
		Models: specs,
		Engine: engine.Options{ContextLen: ctxLen, MaxSeqs: maxSeqs, MaxPending: pending,
			Backend: *backendName, Adapters: loras},
		Progress: bars.update,
		APIKey:   apiKey,
		Logger:   reqLogger,
	})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := e.interruptible(ctx)
	defer cancel()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		err := srv.WaitLoaded(ctx)
		bars.done()
		if err == nil {
			logger.Info("models loaded; serving on http://" + ln.Addr().String())
		}
	}()
	logger.Info("listening on http://"+ln.Addr().String(), "models", len(specs))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(err)
	case <-ctx.Done():
	}
	srv.Drain() // /ready answers 503 from here on; running requests go on
	logger.Info("shutting down: draining requests", "at_most", drain)
	sctx, scancel := context.WithTimeout(context.Background(), drain)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("drain ended; closing the remaining connections", "err", err)
		hs.Close()
	}
	if err := srv.Close(); err != nil {
		return fail(err)
	}
	logger.Info("stopped")
	return 0
}

// dropRequests is a slog.Handler that leaves out the per-request records.
type dropRequests struct{ slog.Handler }

func (h *dropRequests) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "request" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// loadBars draws one load bar per model on a terminal, one after the
// other as the server loads them.
type loadBarSet struct {
	e    env
	mu   sync.Mutex
	cur  *bar
	spec server.Spec
}

func loadBars(e env) *loadBarSet { return &loadBarSet{e: e} }

func (s *loadBarSet) update(sp server.Spec, done, total int64) {
	s.mu.Lock()
	if s.cur == nil || s.spec != sp {
		if s.cur != nil {
			s.cur.Done(false)
		}
		s.spec = sp
		s.cur = newBar(s.e.stderr, "loading "+sp.Name+" ("+filepath.Base(sp.Path)+")", false)
	}
	b := s.cur
	s.mu.Unlock()
	b.Update(done, total)
	if done >= total {
		b.Done(false) // the server logs the load next
	}
}

func (s *loadBarSet) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Done(false)
	}
}
