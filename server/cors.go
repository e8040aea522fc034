package server

import (
	"net/http"
	"slices"
	"strings"
)

// A browser page of another origin may call the API only when the
// server says so (CORS). Off by default: Config.CORSOrigins lists the
// origins allowed, as vLLM's --allowed-origins. Credentials are the
// Authorization header a page sets itself, never cookies, so no
// Access-Control-Allow-Credentials is sent.

// corsHeaders are the request headers a cross-origin page may send.
const corsHeaders = "Authorization, Content-Type, X-Request-Id"

// corsOrigin is the Access-Control-Allow-Origin of a request from
// origin: origin itself when it is listed (matched without regard to
// case and a trailing "/"), "*" when the list holds "*", else "".
func corsOrigin(origin string, allowed []string) string {
	if origin == "" || len(allowed) == 0 {
		return ""
	}
	if slices.Contains(allowed, "*") {
		return "*"
	}
	o := strings.TrimSuffix(strings.ToLower(origin), "/")
	for _, a := range allowed {
		if strings.TrimSuffix(strings.ToLower(a), "/") == o {
			return origin
		}
	}
	return ""
}

// cors adds the CORS headers for an allowed origin to every answer of
// h, and answers its preflight (OPTIONS with
// Access-Control-Request-Method) 204 before the method, key and Host
// checks, which a preflight carries nothing for.
func (s *Server) cors(h http.HandlerFunc) http.HandlerFunc {
	if len(s.cfg.CORSOrigins) == 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		allow := corsOrigin(r.Header.Get("Origin"), s.cfg.CORSOrigins)
		w.Header().Add("Vary", "Origin")
		if allow == "" {
			h(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", allow)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After, X-Ratelimit-Limit-Requests, X-Ratelimit-Remaining-Requests, X-Ratelimit-Limit-Tokens, X-Ratelimit-Remaining-Tokens, X-Ratelimit-Reset-Tokens")
		h(w, r)
	}
}
