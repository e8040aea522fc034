package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// sse writes a text/event-stream: one "data: JSON\n\n" per event and
// "data: [DONE]\n\n" at the end, flushed at once.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error // the first write error (the client went away)
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(b)
}

func (s *sse) raw(b []byte) error {
	if s.err != nil {
		return s.err
	}
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return err
	}
	s.flush()
	return s.err
}

func (s *sse) flush() {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}

// done ends the stream.
func (s *sse) done() { s.raw([]byte("[DONE]")) }

// sendError reports an error after the stream has started, as vLLM does:
// an error object as a data event (then [DONE]).
func (s *sse) sendError(e *apiError) {
	s.send(struct {
		Error *apiError `json:"error"`
	}{e})
}

// newID is prefix followed by 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
