package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/vkllm/vkllm/tokenizer/chat"
)

// responseStore holds the stored responses, bounded for each API key:
// at most max of them, of at most bytes in all (each counted with its
// whole conversation, so what they share is counted more than once), each
// for ttl. The oldest go first. The zero value uses the package's bounds.
type responseStore struct {
	mu    sync.Mutex
	max   int
	bytes int64
	ttl   time.Duration
	byID  map[string]*storedResponse
	byKey map[string]*keyStore
}

type storedResponse struct {
	key  string
	at   time.Time
	size int64
	conv []chat.Message // the conversation it ends, without instructions
	obj  responseObject
}

// keyStore is one key's stored responses, oldest first.
type keyStore struct {
	ids  []string
	size int64
}

func (st *responseStore) init() {
	if st.byID == nil {
		st.byID, st.byKey = map[string]*storedResponse{}, map[string]*keyStore{}
	}
	if st.max == 0 {
		st.max = MaxStoredResponses
	}
	if st.bytes == 0 {
		st.bytes = MaxStoredBytes
	}
	if st.ttl == 0 {
		st.ttl = StoredResponseTTL
	}
}

// put stores obj and the conversation it ends for key, and reports
// whether it did: a response larger than the key's whole budget is not
// stored.
func (st *responseStore) put(key string, obj *responseObject, conv []chat.Message, now time.Time) bool {
	js, _ := json.Marshal(conv)
	out, _ := json.Marshal(obj.Output)
	size := int64(len(js) + len(out) + 512)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.init()
	if size > st.bytes {
		return false
	}
	ks := st.byKey[key]
	if ks == nil {
		ks = &keyStore{}
		st.byKey[key] = ks
	}
	for len(ks.ids) > 0 {
		old := st.byID[ks.ids[0]]
		if len(ks.ids) < st.max && ks.size+size <= st.bytes && (old == nil || now.Sub(old.at) < st.ttl) {
			break
		}
		st.drop(ks, 0)
	}
	r := &storedResponse{key: key, at: now, size: size, conv: conv, obj: *obj}
	r.obj.Store = true
	st.byID[obj.ID] = r
	ks.ids = append(ks.ids, obj.ID)
	ks.size += size
	return true
}

// drop removes the i-th of ks's responses.
func (st *responseStore) drop(ks *keyStore, i int) {
	if r := st.byID[ks.ids[i]]; r != nil {
		ks.size -= r.size
		delete(st.byID, ks.ids[i])
	}
	ks.ids = slices.Delete(ks.ids, i, i+1)
}

// get is the response id stored for key, nil when there is none (an
// expired one, another key's).
func (st *responseStore) get(key, id string, now time.Time) *storedResponse {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.init()
	r := st.byID[id]
	if r == nil || r.key != key {
		return nil
	}
	if now.Sub(r.at) >= st.ttl {
		ks := st.byKey[key]
		st.drop(ks, slices.Index(ks.ids, id))
		return nil
	}
	return r
}

// remove deletes the response id stored for key, and reports whether
// there was one.
func (st *responseStore) remove(key, id string, now time.Time) bool {
	if st.get(key, id, now) == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.byKey[key]
	if i := slices.Index(ks.ids, id); i >= 0 {
		st.drop(ks, i)
		return true
	}
	return false
}

// handleResponseByID is GET (the stored response) and DELETE of
// /v1/responses/{id}.
func (s *Server) handleResponseByID(w http.ResponseWriter, r *http.Request) {
	method := http.MethodGet
	if r.Method == http.MethodDelete {
		method = http.MethodDelete
	}
	s.api(method, func(w http.ResponseWriter, r *http.Request) {
		id, key, now := r.PathValue("id"), infoOf(r.Context()).keyID, time.Now()
		notFound := newError(http.StatusNotFound, "invalid_request_error", "response_not_found", "response with id %q not found", id)
		if r.Method == http.MethodDelete {
			if !s.responses.remove(key, id, now) {
				writeError(w, notFound)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
			return
		}
		st := s.responses.get(key, id, now)
		if st == nil {
			writeError(w, notFound)
			return
		}
		writeJSON(w, http.StatusOK, st.obj)
	})(w, r)
}
