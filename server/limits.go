package server

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vkllm/vkllm/engine"
)

// Key is one API key with its limits.
type Key struct {
	ID     string // names the key in logs and errors; never the key
	Secret string // what a client sends as "Authorization: Bearer SECRET"
	// Concurrency bounds the key's requests in flight (0: no bound).
	Concurrency int
	// TPM bounds the tokens (prompt and completion) the key's requests
	// were sent in the last minute (0: no bound). A request is admitted
	// while the key is under its bound and charged as its tokens are
	// sent (a request that ends early, by a disconnect or an abort,
	// pays for what it got), so requests in flight may take the key
	// past it.
	TPM int
}

// ErrKeys is wrapped by the errors of a bad key list (ParseKeys,
// NewKeys, Keys.Set).
var ErrKeys = errors.New("server: bad API keys")

// ParseKeys reads an API key file: one key a line, blank lines and
// lines starting with '#' skipped. A line is
//
//	KEY_ID KEY [concurrency=N] [tpm=N]
//
// or a lone KEY, whose id is "key-LINE" (its line number). Fields are
// separated by spaces or tabs; N ≥ 0, 0 being no bound. Errors name the
// line, never the key.
func ParseKeys(r io.Reader) ([]Key, error) {
	var keys []Key
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) == 1 {
			keys = append(keys, Key{ID: "key-" + strconv.Itoa(line), Secret: f[0]})
			continue
		}
		k := Key{ID: f[0], Secret: f[1]}
		for _, opt := range f[2:] {
			name, val, _ := strings.Cut(opt, "=")
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: line %d: %s: want a whole number ≥ 0", ErrKeys, line, name)
			}
			switch name {
			case "concurrency":
				k.Concurrency = n
			case "tpm":
				k.TPM = n
			default:
				return nil, fmt.Errorf("%w: line %d: unknown limit %q (want concurrency=N or tpm=N)", ErrKeys, line, name)
			}
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeys, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrKeys)
	}
	return keys, nil
}

// Keys is a set of API keys and what each is using, safe for concurrent
// use. Set replaces the set (a reload): a key whose id stays keeps its
// requests in flight and its tokens of the last minute.
type Keys struct {
	mu    sync.Mutex
	keys  []Key
	usage map[string]*keyUsage // by id
	now   func() time.Time     // time.Now; tests move it
}

// keyUsage is one key id's requests in flight and recent tokens.
type keyUsage struct {
	inFlight int
	spent    []spend // oldest first, within the last minute
}

type spend struct {
	at     time.Time
	tokens int
}

// NewKeys is a Keys of keys (see Set).
func NewKeys(keys []Key) (*Keys, error) {
	k := &Keys{usage: map[string]*keyUsage{}, now: time.Now}
	if err := k.Set(keys); err != nil {
		return nil, err
	}
	return k, nil
}

// Set replaces the keys; ids and secrets must be non-empty and unique,
// limits ≥ 0. On error the keys stay as they were.
func (k *Keys) Set(keys []Key) error {
	ids, secrets := map[string]bool{}, map[string]bool{}
	for i, key := range keys {
		switch {
		case key.ID == "" || key.Secret == "":
			return fmt.Errorf("%w: key %d has no id or no secret", ErrKeys, i)
		case ids[key.ID]:
			return fmt.Errorf("%w: id %q twice", ErrKeys, key.ID)
		case secrets[key.Secret]:
			return fmt.Errorf("%w: key %q repeats another's secret", ErrKeys, key.ID)
		case key.Concurrency < 0 || key.TPM < 0:
			return fmt.Errorf("%w: key %q: negative limit", ErrKeys, key.ID)
		}
		ids[key.ID], secrets[key.Secret] = true, true
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no key", ErrKeys)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append([]Key(nil), keys...)
	for id, u := range k.usage {
		if !ids[id] && u.inFlight == 0 {
			delete(k.usage, id)
		}
	}
	return nil
}

// Key is the key of that id with its limits, its Secret left empty, and
// whether there is one.
func (k *Keys) Key(id string) (Key, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range k.keys {
		if key.ID == id {
			key.Secret = ""
			return key, true
		}
	}
	return Key{}, false
}

// find is the key whose secret is got (comparing every key in constant
// time), and whether there is one.
func (k *Keys) find(got string) (Key, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var found Key
	ok := false
	for _, key := range k.keys {
		if subtle.ConstantTimeCompare([]byte(got), []byte(key.Secret)) == 1 {
			found, ok = key, true
		}
	}
	return found, ok
}

// rateLimit is a refusal: which limit, and when to retry.
type rateLimit struct {
	kind       string // "requests" or "tokens"
	retryAfter time.Duration
}

// admit takes a slot of key's concurrency when it is under both its
// limits; it returns the limit headers to send and, when refused, why.
// A request admitted must call release when it ends.
func (k *Keys) admit(key Key) (http.Header, *rateLimit) {
	k.mu.Lock()
	defer k.mu.Unlock()
	u := k.usage[key.ID]
	if u == nil {
		u = &keyUsage{}
		k.usage[key.ID] = u
	}
	now := k.now()
	spent := u.prune(now)
	var refuse *rateLimit
	switch {
	case key.Concurrency > 0 && u.inFlight >= key.Concurrency:
		refuse = &rateLimit{kind: "requests", retryAfter: time.Second}
	case key.TPM > 0 && spent >= key.TPM:
		// Retry when enough of the last minute's tokens have aged out.
		wait, left := time.Minute, spent
		for _, s := range u.spent {
			left -= s.tokens
			if left < key.TPM {
				wait = s.at.Add(time.Minute).Sub(now)
				break
			}
		}
		// One reset time, in whole seconds as Retry-After must be, for
		// the header, the x-ratelimit reset and the message alike.
		wait = time.Duration(math.Ceil(max(wait, time.Millisecond).Seconds())) * time.Second
		refuse = &rateLimit{kind: "tokens", retryAfter: wait}
	default:
		u.inFlight++
	}
	h := k.headers(key, u, now)
	if refuse != nil {
		h.Set("X-Ratelimit-Reset-"+strings.ToUpper(refuse.kind[:1])+refuse.kind[1:], refuse.retryAfter.String())
	}
	return h, refuse
}

// release ends a request of key that used tokens.
func (k *Keys) release(key Key, tokens int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	u := k.usage[key.ID]
	if u == nil {
		return
	}
	u.inFlight--
	if tokens > 0 {
		u.spent = append(u.spent, spend{at: k.now(), tokens: tokens})
	}
}

// cacheScope is the engine's cache scope of r (engine.WithCacheScope):
// its key's id when keys are configured and do not share the caches
// (Config.SharedCache), else none.
func (s *Server) cacheScope(r *http.Request) engine.StreamOption {
	scope := ""
	if s.cfg.Keys != nil && !s.cfg.SharedCache {
		scope = "key:" + infoOf(r.Context()).keyID
	}
	return engine.WithCacheScope(scope)
}

// charge counts tokens that a request of key is sending now (it pays
// as it goes: a request cut short still pays for what it sent).
func (k *Keys) charge(key Key, tokens int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	u := k.usage[key.ID]
	if u == nil || tokens <= 0 {
		return
	}
	now := k.now()
	if n := len(u.spent); n > 0 && now.Sub(u.spent[n-1].at) < 100*time.Millisecond {
		u.spent[n-1].tokens += tokens // one spend per 100 ms at most
		return
	}
	u.spent = append(u.spent, spend{at: now, tokens: tokens})
}

// prune drops the spends older than a minute and returns the tokens of
// the rest.
func (u *keyUsage) prune(now time.Time) int {
	i := 0
	for i < len(u.spent) && now.Sub(u.spent[i].at) >= time.Minute {
		i++
	}
	u.spent = u.spent[i:]
	n := 0
	for _, s := range u.spent {
		n += s.tokens
	}
	return n
}

// headers are OpenAI's x-ratelimit-* headers for key's bounds: requests
// are the concurrency bound and the free slots, tokens the TPM bound,
// what is left of it and when the minute's oldest tokens age out (a
// refusal's admit sets the reset to its Retry-After).
func (k *Keys) headers(key Key, u *keyUsage, now time.Time) http.Header {
	h := http.Header{}
	if key.Concurrency > 0 {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(key.Concurrency))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(max(key.Concurrency-u.inFlight, 0)))
	}
	if key.TPM > 0 {
		spent := 0
		for _, s := range u.spent {
			spent += s.tokens
		}
		reset := time.Duration(0)
		if len(u.spent) > 0 {
			reset = u.spent[0].at.Add(time.Minute).Sub(now)
		}
		h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(key.TPM))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(max(key.TPM-spent, 0)))
		h.Set("X-Ratelimit-Reset-Tokens", reset.Round(time.Millisecond).String())
	}
	return h
}

// error is the 429 of a refusal, in OpenAI's shape (type "requests" or
// "tokens", code rate_limit_exceeded) with Retry-After in whole seconds.
func (l *rateLimit) error(key Key) *apiError {
	var e *apiError
	if l.kind == "requests" {
		e = newError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
			"rate limit reached for key %q on concurrent requests: limit %d; retry in %s (or when one ends)", key.ID, key.Concurrency, l.retryAfter)
	} else {
		e = newError(http.StatusTooManyRequests, "tokens", "rate_limit_exceeded",
			"rate limit reached for key %q on tokens per minute: limit %d; retry in %s", key.ID, key.TPM, l.retryAfter)
	}
	e.RetryAfter = int(math.Ceil(l.retryAfter.Seconds()))
	return e
}
