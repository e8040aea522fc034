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
	"sync/atomic"
	"time"

	"github.com/vkllm/vkllm/cmd/internal/runinfo"
	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/errcode"
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
// --draft turns on speculative decoding for every model (/metrics counts
// the drafts under vLLM's spec_decode names); a model whose vocabulary
// is not the draft model's fails to load (logged with
// engine.ErrDraftVocab; /health reports it failed). SIGINT or SIGTERM
// turns /ready to 503, stops accepting connections, lets running
// requests finish (at most --drain; streams still running then
// end with an error event and [DONE]), then closes the models; a second
// signal during the drain stops at once. The API key comes from
// $VKLLM_API_KEY or --api-key-file, never from the command line (where
// ps would show it), and is never printed. The key file holds one key a
// line, "KEY_ID KEY [concurrency=N] [tpm=N]" or a lone KEY (see
// server.ParseKeys); SIGHUP reads it again (a bad file keeps the keys
// as they were). The log (slog's text format, JSON with --log-json) goes
// to stderr, one record per request, with no prompt text unless
// --log-prompts.
func serve(ctx context.Context, e env, args []string) int {
	var (
		specs        modelFlags
		loras        loraFlags
		addr         string
		apiKeyFile   string
		maxSeqs      int
		ctxLen       int
		pending      int
		maxConns     int
		bodyTimeout  time.Duration
		writeTimeout time.Duration
		literal      bool
		drain        time.Duration
		quiet        bool
		logJSON      bool
		logPrompts   bool
		cacheBytes   int64
		draft        string
		draftMax     int
		allowedHosts string
		corsOrigins  string
		perClient    int
	)
	fs := newFlags(e, "serve")
	fs.Var(&specs, "model", "NAME=PATH of a model folder or .gguf file, or NAME=hf://OWNER/REPO[:QUANT] (pulled first) (repeatable; several files under one NAME are told apart as NAME:QUANT)")
	fs.Var(&loras, "lora", "NAME=PATH of a LoRA adapter (a PEFT folder or a llama.cpp GGUF LoRA file, or a Hub name hf://OWNER/REPO[:QUANT|/FILE], pulled first) for every model; request it as model \"MODEL:NAME\" (repeatable)")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&apiKeyFile, "api-key-file", "", "require Authorization: Bearer KEY on /v1/, KEY being one of this file's keys, one a line: \"KEY_ID KEY [concurrency=N] [tpm=N]\" or a lone KEY; SIGHUP reloads it (else $VKLLM_API_KEY, when set)")
	backendName := runinfo.BackendFlag(fs)
	fs.StringVar(&allowedHosts, "allowed-hosts", "", "without an API key, the Host names served beside IP addresses, localhost and --addr's host: comma-separated, \".example.com\" for a domain and its subdomains, \"*\" for any (other names get 403: DNS rebinding)")
	fs.StringVar(&corsOrigins, "cors-origins", "", "origins whose web pages may call the API from a browser (CORS), comma-separated: \"https://app.example.com\", or \"*\" for any (default: none)")
	fs.IntVar(&maxSeqs, "max-seqs", 16, "requests running at once per model")
	fs.IntVar(&ctxLen, "ctx", 0, "KV cells per model, shared by its requests (0: min(model positions, 4096))")
	fs.IntVar(&pending, "max-pending", 256, "requests queued or running per model; more get 429")
	fs.IntVar(&maxConns, "max-conns", 512, "client connections open at once; more wait to be accepted (the last 1/32 serve only /health and /ready; past 3/4, idle keep-alive connections close after 1 s)")
	fs.IntVar(&perClient, "max-conns-per-client", 0, "connections open at once from one client address; more are closed at once (0: max-conns/4)")
	fs.DurationVar(&bodyTimeout, "body-timeout", 30*time.Second, "how long a client may take to send a request body")
	fs.DurationVar(&writeTimeout, "write-timeout", 30*time.Second, "how long a streaming client may stop reading before its stream is dropped")
	fs.BoolVar(&literal, "literal-content", false, "tokenise chat message content as plain text, so special-token text in it (<|im_end|>) is not a control token (requests may set literal_content)")
	fs.DurationVar(&drain, "drain", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish (a second signal stops at once)")
	fs.BoolVar(&quiet, "quiet", false, "do not log each request")
	fs.BoolVar(&logJSON, "log-json", false, "log in JSON, one object a line")
	fs.BoolVar(&logPrompts, "log-prompts", false, "add each request's prompt to its log record (off: the log holds no user text)")
	fs.Int64Var(&cacheBytes, "cache-bytes", 0, "bytes of the inference cache that answers repeated greedy or seeded requests (0: 5% of memory, -1: off)")
	fs.StringVar(&draft, "draft", "", "speculative decoding for every --model: \"ngram\" (prompt lookup) or a draft model (a folder or .gguf file, or a Hub name), opened once per model on its backend; a model whose vocabulary is not the draft's fails to load")
	fs.IntVar(&draftMax, "draft-max", 0, "the most draft tokens per request and step, [1, 64] (default 8; with --draft)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	if logJSON {
		logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	}
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
	// Hub names are pulled before serving.
	paths := []flagPath{{"--draft", &draft}}
	for i, sp := range specs {
		paths = append(paths, flagPath{"--model " + sp.Name, &specs[i].Path})
	}
	pctx, pcancel := e.interruptible(ctx)
	err := resolvePaths(pctx, e.stderr, paths...)
	if err == nil {
		err = resolveMap(pctx, e.stderr, "--lora", loras)
	}
	pcancel()
	if err != nil {
		return fail(err)
	}
	if err := checkDraft(draft, draftMax); err != nil {
		return fail(err)
	}
	keyList, err := readKeys(apiKeyFile)
	if err != nil {
		return fail(err)
	}
	var keys *server.Keys
	if keyList != nil {
		if keys, err = server.NewKeys(keyList); err != nil {
			return fail(fmt.Errorf("--api-key-file: %w", err))
		}
	}
	if maxConns < 1 {
		return fail(fmt.Errorf("--max-conns %d: want at least 1", maxConns))
	}
	reqLogger := logger
	if quiet {
		reqLogger = slog.New(&dropRequests{logger.Handler()})
	}
	bars := loadBars(e)
	srv, err := server.New(server.Config{
		Models: specs,
		Engine: engine.Options{ContextLen: ctxLen, MaxSeqs: maxSeqs, MaxPending: pending,
			Backend: *backendName, Adapters: loras, CacheBytes: cacheBytes, Draft: draft, DraftMax: draftMax},
		Progress:       bars.update,
		Keys:           keys,
		LogPrompts:     logPrompts,
		BodyTimeout:    bodyTimeout,
		WriteTimeout:   writeTimeout,
		LiteralContent: literal,
		Logger:         reqLogger,
		AllowedHosts:   hostNames(addr, allowedHosts),
		CORSOrigins:    commaList(corsOrigins),
	})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ln = srv.Listen(hs, ln, server.ConnLimits{Max: maxConns, PerClient: perClient})
	ctx, cancel := e.interruptible(ctx)
	defer cancel()
	if e.hangups != nil && keys != nil {
		hup := e.hangups()
		go func() {
			for {
				select {
				case <-hup:
					reloadKeys(apiKeyFile, keys, logger)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
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
	srv.Drain() // running requests go on
	logger.Info("not ready: /ready answers 503 from now on")
	logger.Info("shutting down: draining requests", "at_most", drain)
	again := e.signals() // a second SIGINT or SIGTERM: stop now
	sctx, scancel := context.WithTimeout(context.Background(), drain)
	defer scancel()
	var stopNow atomic.Bool
	go func() {
		select {
		case <-again:
			stopNow.Store(true)
			scancel()
		case <-sctx.Done():
		}
	}()
	if err := hs.Shutdown(sctx); err != nil {
		if !stopNow.Load() {
			// The drain ended: streams still running get an error event
			// and [DONE] before their connections close.
			logger.Warn("drain ended; stopping the remaining requests")
			srv.AbortStreams()
			gctx, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
			hs.Shutdown(gctx)
			gcancel()
		} else {
			logger.Warn("second signal: stopping now")
		}
		hs.Close()
	}
	if err := srv.Close(); err != nil {
		return fail(err)
	}
	logger.Info("stopped")
	return 0
}

// readKeys is the API keys: those of the file at path when given
// (server.ParseKeys), else $VKLLM_API_KEY as the key "default", else
// none (nil).
func readKeys(path string) ([]server.Key, error) {
	if path == "" {
		if k := os.Getenv("VKLLM_API_KEY"); k != "" {
			return []server.Key{{ID: "default", Secret: k}}, nil
		}
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--api-key-file: %w", err)
	}
	defer f.Close()
	keys, err := server.ParseKeys(f)
	if err != nil {
		return nil, fmt.Errorf("--api-key-file: %w", err)
	}
	return keys, nil
}

// reloadKeys reads the key file again into keys (SIGHUP); a file that
// cannot be read or parsed leaves them as they were. It logs the ids
// kept, never a key.
func reloadKeys(path string, keys *server.Keys, log *slog.Logger) {
	if path == "" {
		log.Warn("SIGHUP: no --api-key-file to reload")
		return
	}
	list, err := readKeys(path)
	if err == nil {
		err = keys.Set(list)
	}
	if err != nil {
		log.Error("SIGHUP: API keys not reloaded; the old ones stay", "err", err)
		return
	}
	log.Info("SIGHUP: API keys reloaded", "keys", len(list))
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

// hostNames are the names a keyless server answers as Host beside IP
// literals and localhost: the host of addr when it is a name, and the
// comma-separated list.
func hostNames(addr, list string) []string {
	var names []string
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" && net.ParseIP(h) == nil {
		names = append(names, h)
	}
	return append(names, commaList(list)...)
}

// commaList is the non-empty items of a comma-separated flag value.
func commaList(list string) []string {
	var items []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			items = append(items, n)
		}
	}
	return items
}
