package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

// sse writes a text/event-stream: one "data: JSON\n\n" per event and
// "data: [DONE]\n\n" at the end, flushed at once.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // for each event's write (Config.WriteTimeout)
	err     error         // the first write error (the client went away or stopped reading)
}

func newSSE(w http.ResponseWriter, timeout time.Duration) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w), timeout: timeout}
	s.write(nil)
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
	return s.write(buf)
}

// write writes b and flushes it within the write timeout; the deadline
// is cleared afterwards, so it never outlives the event (nor the stream,
// on a connection that serves another request next).
func (s *sse) write(b []byte) error {
	deadline := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)) == nil
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			s.err = err
		}
	}
	if s.err == nil {
		s.err = s.rc.Flush()
	}
	if deadline && s.err == nil {
		s.rc.SetWriteDeadline(time.Time{})
	}
	return s.err
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
