package server

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// webFiles is the chat page: index.html and the assets it loads from
// /web/ (plain HTML, CSS and JavaScript modules; nothing is built).
//
//go:embed web
var webFiles embed.FS

// webCSP keeps the page to its own scripts and styles and to this
// server's API: even a model answer that slipped into the DOM as HTML
// could not run script or load anything from elsewhere.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// webHandler serves GET / (the chat page), GET /favicon.ico and GET
// /web/NAME (its assets).
// The page calls /v1/ on the same origin, so it needs no CORS; the API
// key, when the server has one, is asked of the user by the page.
func webHandler() http.Handler {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	assets := http.StripPrefix("/web/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET"))
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", webCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch {
		case r.URL.Path == "/":
			http.ServeFileFS(w, r, sub, "index.html")
			return
		case r.URL.Path == "/favicon.ico": // asked for by browsers, whatever the page says
			http.ServeFileFS(w, r, sub, "favicon.ico")
			return
		case strings.HasSuffix(r.URL.Path, "/"): // no directory listings
			writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url", "unknown URL %s %s", r.Method, r.URL.Path))
			return
		}
		assets.ServeHTTP(w, r)
	})
}
