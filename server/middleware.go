package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
