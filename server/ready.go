package server

import (
	"net/http"
	"sync/atomic"
)

// Readiness for orchestrators. /health answers whether the models are
// loaded (a liveness or startup probe); /ready answers whether this
// replica should get new requests: 503 while a model is loading or failed
// to load, and from the moment Drain is called, so a load balancer or the
// Kubernetes inference gateway stops sending it traffic while the
// requests it has accepted finish. Requests that still arrive while
// draining are served as usual: readiness only asks for no more.

// Drain marks the server as draining: /ready answers 503 from now on.
// Call it when a shutdown begins (on SIGTERM), before the HTTP server
// stops accepting connections. It is safe to call more than once.
func (s *Server) Drain() { s.drain.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.drain.draining.Load() }

// drainState is the Server's readiness state beside its models'.
type drainState struct{ draining atomic.Bool }

// handleReady is 200 when every model is loaded and the server is not
// draining, 503 otherwise; its JSON body says which ("ready", "loading",
// "unavailable" when a model failed, "draining").
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET"))
		return
	}
	status := "ready"
	for _, e := range s.entries {
		switch {
		case !isReady(e):
			status = "loading"
		case e.err != nil && status != "loading":
			status = "unavailable"
		}
	}
	if s.Draining() {
		status = "draining"
	}
	code := http.StatusOK
	if status != "ready" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]string{"status": status})
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
