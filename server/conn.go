package server

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// ConnLimits bound the connections of a listener wrapped by
// Server.Listen, so that no client can hold them all: one client of 512
// keep-alive connections would otherwise shut every other out.
type ConnLimits struct {
	// Max is the most connections open at once (default 512); beyond it
	// Accept waits for one to close.
	Max int
	// PerClient is the most connections open at once from one client
	// address (default Max/4); a connection beyond it is closed at once.
	PerClient int
	// Reserve is how many of Max are kept for probes (default Max/32,
	// at least 2): a connection accepted when only the reserve is left
	// is served /health and /ready only; any other request on it first
	// waits up to IdleTimeout/4 for room (a connection closing, or one
	// it may displace, below), then is answered 503 (code server_busy)
	// and the connection closed.
	Reserve int
	// IdleTimeout is how long a connection may stay idle (a keep-alive
	// one between requests, or a new one that has not sent its first)
	// while more than 3/4 of Max are open (default 1 s): then every new
	// one idle that long is closed, and keep-alive ones until 3/4 are
	// open, of the client holding the most first; otherwise the
	// http.Server's IdleTimeout applies. And when a connection arrives
	// that would fall into the reserve (or its first request, waiting in
	// the reserve as above), a connection of another client idle for
	// IdleTimeout/4 is closed to make room for it, of the client holding
	// the most first: one that has sent no request since it opened; else
	// a keep-alive one of a client holding more than its fair share,
	// more than PerClient/2 and more than the newcomer's client. So
	// clients that hold connections, used or not, cannot shut others out
	// (a burst of fresh ones only delays a newcomer's request by up to
	// IdleTimeout/4), while a client within half its bound keeps its
	// keep-alive connections to the idle timeout: closing one early
	// races with its client's next request, which a client does not
	// retry when it is a POST; that race is left to the clients holding
	// the most.
	IdleTimeout time.Duration
	// SendBuffer is each connection's socket send buffer in bytes
	// (default 64 KiB; negative: the system's, which grows to MiBs). A
	// stream whose client stops reading fills the buffers at once and
	// its next event's write times out (Config.WriteTimeout), ending the
	// request and freeing its cells, instead of first filling MiBs.
	SendBuffer int
}

// Listen wraps ln with the limits lim and sets the hooks of hs that they
// need (ConnContext, ConnState: any hooks already set still run). Serve
// hs on the listener it returns:
//
//	hs := &http.Server{Handler: srv.Handler()}
//	hs.Serve(srv.Listen(hs, ln, server.ConnLimits{}))
func (s *Server) Listen(hs *http.Server, ln net.Listener, lim ConnLimits) net.Listener {
	if lim.Max <= 0 {
		lim.Max = 512
	}
	if lim.PerClient <= 0 {
		lim.PerClient = max(lim.Max/4, 1)
	}
	if lim.Reserve <= 0 {
		lim.Reserve = max(lim.Max/32, 2)
	}
	lim.Reserve = min(lim.Reserve, lim.Max-1)
	if lim.IdleTimeout <= 0 {
		lim.IdleTimeout = time.Second
	}
	if lim.SendBuffer == 0 {
		lim.SendBuffer = 64 << 10
	}
	l := &limitListener{Listener: ln, lim: lim, slots: make(chan struct{}, lim.Max), done: make(chan struct{}),
		perClient: map[string]int{}, idle: map[*limitedConn]time.Time{}, grace: lim.IdleTimeout / 4}
	prevCtx, prevState := hs.ConnContext, hs.ConnState
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		if lc, ok := c.(*limitedConn); ok && lc.reserved { // before its first request: nothing writes it yet
			ctx = context.WithValue(ctx, reservedKey{}, lc)
		}
		return ctx
	}
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		if lc, ok := c.(*limitedConn); ok {
			l.state(lc, st)
		}
		if prevState != nil {
			prevState(c, st)
		}
	}
	go l.sweep()
	return l
}

// reservedKey keys, in a request's context, its *limitedConn when that
// was accepted into the reserve.
type reservedKey struct{}

// checkReserve answers 503 to a request other than a probe on a reserve
// connection that finds no room within the grace, and reports whether
// it did.
func checkReserve(w http.ResponseWriter, r *http.Request) bool {
	lc, _ := r.Context().Value(reservedKey{}).(*limitedConn)
	if lc == nil || r.URL.Path == "/health" || r.URL.Path == "/ready" || lc.l.leaveReserve(r.Context(), lc) {
		return false
	}
	w.Header().Set("Connection", "close")
	if r.ContentLength != 0 {
		dropBody(w)
	}
	e := newError(http.StatusServiceUnavailable, "server_error", "server_busy",
		"the server has too many connections open; retry shortly")
	e.RetryAfter = 1
	writeError(w, e)
	return true
}

type limitListener struct {
	net.Listener
	lim       ConnLimits
	slots     chan struct{} // one per open connection (Max)
	done      chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	open      int
	perClient map[string]int
	idle      map[*limitedConn]time.Time // connections waiting for a request, since when
	grace     time.Duration              // idle at least this long before a newcomer may displace one
	reserved  int                        // of open, accepted into the reserve and not out of it since
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		client := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(client); err == nil {
			client = h
		}
		l.mu.Lock()
		if l.perClient[client] >= l.lim.PerClient {
			l.mu.Unlock()
			c.Close()
			<-l.slots
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok && l.lim.SendBuffer > 0 {
			tc.SetWriteBuffer(l.lim.SendBuffer)
		}
		for l.open-l.reserved+1 > l.lim.Max-l.lim.Reserve { // down to below the reserve, if it can be
			v := l.victim(client, time.Now())
			if v == nil {
				break
			}
			l.mu.Unlock()
			v.Close() // frees its count and its slot
			l.mu.Lock()
		}
		l.perClient[client]++
		l.open++
		reserved := l.open-l.reserved > l.lim.Max-l.lim.Reserve
		if reserved {
			l.reserved++
		}
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, client: client, reserved: reserved}, nil
	}
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// state follows a connection's http.ConnState: an idle one may be closed
// by sweep.
func (l *limitListener) state(c *limitedConn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		l.idle[c] = time.Now()
	default:
		c.used = true
		delete(l.idle, c)
	}
}

// leaveReserve reports whether c, a connection whose request is not a
// probe, is out of the reserve or gets out of it within l.grace: when
// fewer than Max-Reserve connections outside the reserve are open, or
// by displacing a victim. It waits no longer than ctx.
func (l *limitListener) leaveReserve(ctx context.Context, c *limitedConn) bool {
	deadline := time.Now().Add(l.grace)
	for {
		l.mu.Lock()
		now := time.Now()
		var v *limitedConn
		if c.reserved && l.open-l.reserved >= l.lim.Max-l.lim.Reserve {
			v = l.victim(c.client, now)
		}
		if c.reserved && (l.open-l.reserved < l.lim.Max-l.lim.Reserve || v != nil) {
			c.reserved = false // it takes the victim's place
			l.reserved--
		}
		out := !c.reserved
		l.mu.Unlock()
		if v != nil {
			v.Close()
		}
		if out {
			return true
		}
		if now.After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(l.grace/8+time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// victim is the connection a newcomer from client displaces when only
// the reserve is left (nil when none may be): one of another client,
// outside the reserve (closing one there makes no room), idle for at
// least l.grace; one that has sent no request since it opened if there
// is one, else a keep-alive one of a client holding more than its fair
// share: more than client holds (displacing it evens the two out, never
// reverses them) and more than PerClient/2 (a client within half its
// bound, as the honest clients behind one proxy address, keeps its
// keep-alive connections). Of the client holding the most first, then
// the longest idle. l.mu is held; the victim is not closed yet.
func (l *limitListener) victim(client string, now time.Time) *limitedConn {
	var best *limitedConn
	var bestSince time.Time
	floor := max(l.lim.PerClient/2, l.perClient[client])
	for c, since := range l.idle {
		if c.client == client || c.reserved || now.Sub(since) < l.grace || c.used && l.perClient[c.client] <= floor {
			continue
		}
		better := best == nil || best.used && !c.used
		if best != nil && best.used == c.used {
			n, m := l.perClient[c.client], l.perClient[best.client]
			better = n > m || n == m && since.Before(bestSince)
		}
		if better {
			best, bestSince = c, since
		}
	}
	if best != nil {
		delete(l.idle, best) // not chosen twice, nor swept
	}
	return best
}

// sweep, while more than 3/4 of Max are open, closes the connections
// idle longer than lim.IdleTimeout: every one that never sent a request,
// then keep-alive ones until 3/4 are open, of the client holding the
// most first, then the longest idle (closing one races with its
// client's next request, so no more are closed than the pressure asks).
// It runs until the listener closes.
func (l *limitListener) sweep() {
	t := time.NewTicker(l.lim.IdleTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case now := <-t.C:
			l.mu.Lock()
			stale := l.stale(now)
			l.mu.Unlock()
			for _, c := range stale {
				c.Close()
			}
		}
	}
}

// stale is what sweep closes at now, taken out of l.idle (l.mu held).
func (l *limitListener) stale(now time.Time) []*limitedConn {
	limit := l.lim.Max * 3 / 4
	if l.open <= limit {
		return nil
	}
	var unused, kept []*limitedConn
	for c, since := range l.idle {
		switch {
		case now.Sub(since) < l.lim.IdleTimeout:
		case c.used:
			kept = append(kept, c)
		default:
			unused = append(unused, c)
		}
	}
	slices.SortFunc(kept, func(a, b *limitedConn) int {
		if d := l.perClient[b.client] - l.perClient[a.client]; d != 0 {
			return d
		}
		return l.idle[a].Compare(l.idle[b])
	})
	kept = kept[:min(len(kept), max(0, l.open-len(unused)-limit))]
	out := append(unused, kept...)
	for _, c := range out {
		delete(l.idle, c)
	}
	return out
}

// limitedConn is a connection counted by its listener until it closes.
type limitedConn struct {
	net.Conn
	l        *limitListener
	client   string
	reserved bool // in the reserve: probes only (l.mu)
	used     bool // has sent a request (l.mu)
	once     sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		l.open--
		if c.reserved {
			l.reserved--
		}
		if l.perClient[c.client]--; l.perClient[c.client] <= 0 {
			delete(l.perClient, c.client)
		}
		delete(l.idle, c)
		l.mu.Unlock()
		<-l.slots
	})
	return err
}
