// Command server is vkllm's OpenAI-compatible HTTP server.
//
//	go run ./examples/server --model NAME=PATH [--model NAME=PATH …] [--addr 127.0.0.1:8080]
//	    [--api-key KEY | env VKLLM_API_KEY] [--backend auto|cpu|cpu-ref|vulkan] [--max-seqs N] [--ctx N]
//
// Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
// GET /health (503 until every model is loaded), GET /metrics (Prometheus,
// vLLM's metric names). Models load in the background after the listener is
// up. SIGINT or SIGTERM stops accepting connections, lets running requests
// finish (at most --drain), then closes the models.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vkllm/vkllm/internal/runinfo"
	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan" for --backend vulkan|auto

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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	var (
		specs   modelFlags
		addr    string
		apiKey  string
		maxSeqs int
		ctxLen  int
		pending int
		drain   time.Duration
	)
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&specs, "model", "NAME=PATH of a model folder or .gguf file (repeatable; several files under one NAME are told apart as NAME:QUANT)")
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&apiKey, "api-key", os.Getenv("VKLLM_API_KEY"), "require Authorization: Bearer KEY on /v1/ (default $VKLLM_API_KEY)")
	backendName := runinfo.BackendFlag(fs)
	fs.IntVar(&maxSeqs, "max-seqs", 16, "requests running at once per model")
	fs.IntVar(&ctxLen, "ctx", 0, "KV cells per model, shared by its requests (0: min(model positions, 4096))")
	fs.IntVar(&pending, "max-pending", 256, "requests queued or running per model; more get 429")
	fs.DurationVar(&drain, "drain", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logf := log.New(stderr, "", log.LstdFlags).Printf
	fail := func(err error) int {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if len(specs) == 0 {
		return fail(errors.New("give at least one --model NAME=PATH"))
	}
	if err := runinfo.CheckBackend(*backendName); err != nil {
		return fail(err)
	}
	srv, err := server.New(server.Config{
		Models: specs,
		Engine: engine.Options{ContextLen: ctxLen, MaxSeqs: maxSeqs, MaxPending: pending,
			Backend: *backendName},
		APIKey: apiKey,
		Logf:   logf,
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
	go func() {
		if err := srv.WaitLoaded(ctx); err == nil {
			logf("models loaded; serving on http://%s", ln.Addr())
		}
	}()
	logf("listening on http://%s (loading %d model file(s))", ln.Addr(), len(specs))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(err)
	case <-ctx.Done():
	}
	logf("shutting down: draining requests (at most %s)", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logf("drain: %v; closing the remaining connections", err)
		hs.Close()
	}
	if err := srv.Close(); err != nil {
		return fail(err)
	}
	logf("stopped")
	return 0
}
