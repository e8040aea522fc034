package server

import (
	"net"
	"net/http"
	"strings"
)

// A server without an API key trusts whoever reaches it, which a web
// page can do through DNS rebinding: its own name, rebound to 127.0.0.1,
// makes the page same-origin with the server. So without a key only a
// request whose Host is one of the server's own names is served, as
// Jupyter's and webpack's dev servers do: an IP literal (no name to
// rebind), "localhost" and its subdomains, and Config.AllowedHosts.

// hostAllowed reports whether a request of Host host may be served by a
// keyless server that also accepts the names of allowed ("*" accepts
// any; ".example.com" that domain and its subdomains).
func hostAllowed(host string, allowed []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	if name == "" {
		return true // HTTP/1.0 without a Host: no name was resolved to reach us
	}
	if net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.ToLower(a), ".")
		switch {
		case a == "*", a == name:
			return true
		case strings.HasPrefix(a, ".") && (name == a[1:] || strings.HasSuffix(name, a)):
			return true
		}
	}
	return false
}

// checkHost answers 403 to a request of a keyless server whose Host is
// not one of its names, and reports whether it did.
func (s *Server) checkHost(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Keys != nil || hostAllowed(r.Host, s.cfg.AllowedHosts) {
		return false
	}
	if r.ContentLength != 0 {
		dropBody(w)
	}
	writeError(w, newError(http.StatusForbidden, "invalid_request_error", "host_not_allowed",
		"the Host %q is not one of this server's names; a server without an API key answers only its own (see AllowedHosts, --allowed-hosts)", r.Host))
	return true
}
