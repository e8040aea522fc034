package server

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

// connServer serves ts's server through Listen with lim on a loopback
// listener of its own, and returns its address.
func connServer(t *testing.T, ts *testServer, lim ConnLimits) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ts.srv.Handler(), IdleTimeout: time.Minute}
	ln := ts.srv.Listen(hs, inner, lim)
	var wg sync.WaitGroup
	wg.Go(func() { hs.Serve(ln) })
	t.Cleanup(func() { hs.Close(); wg.Wait() })
	return inner.Addr().String()
}

// dialFrom opens a connection to addr from the loopback address src
// (127.0.0.0/8: each is another client address).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// get sends GET path on c (keep-alive) and returns the status, 0 when
// no answer came within 2 s or the connection was closed.
func get(c net.Conn, path string) int {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return resp.StatusCode
}

// TestConnectionsFair: one client address holding many keep-alive
// connections does not shut others out; when only the reserve is left,
// probes still answer and other requests get 503; under pressure idle
// connections are closed; beyond Max, Accept waits for one to close.
func TestConnectionsFair(t *testing.T) {
	ts, _ := newFakeServer(t, "hi")

	t.Run("per client", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 64, PerClient: 8, IdleTimeout: time.Minute})
		var hog []net.Conn
		served := 0
		for range 40 { // one client opens 40 keep-alive connections
			c := dialFrom(t, "127.0.0.1", addr)
			hog = append(hog, c)
			if get(c, "/v1/models") == 200 {
				served++
			}
		}
		defer func() {
			for _, c := range hog {
				c.Close()
			}
		}()
		if served != 8 {
			t.Errorf("one client got %d connections served, want 8", served)
		}
		other := dialFrom(t, "127.0.0.2", addr)
		defer other.Close()
		if got := get(other, "/v1/models"); got != 200 {
			t.Errorf("another client: %d, want 200", got)
		}
	})

	t.Run("reserve and idle", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 16, PerClient: 16, Reserve: 2, IdleTimeout: 300 * time.Millisecond})
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		body := `{"model":"fake","messages":[{"role":"user","content":"a"}]}`
		for i := range 14 { // every slot but the reserve, busy: a request's body under way
			c := dialFrom(t, fmt.Sprintf("127.0.1.%d", i+1), addr)
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
			conns = append(conns, c)
		}
		time.Sleep(100 * time.Millisecond) // accepted and read
		probe := dialFrom(t, "127.0.2.1", addr)
		conns = append(conns, probe)
		if got := get(probe, "/health"); got != 200 {
			t.Errorf("/health on a reserve connection: %d, want 200", got)
		}
		work := dialFrom(t, "127.0.2.2", addr)
		conns = append(conns, work)
		if got := get(work, "/v1/models"); got != 503 {
			t.Errorf("/v1/models on a reserve connection: %d, want 503", got)
		}
		// The 14 end their requests and go idle: under pressure, the
		// oldest idle ones are closed after the short idle timeout, until
		// 3/4 of Max are open (the probe's connection, then two of them).
		for i, c := range conns[:14] {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprint(c, body[10:])
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("connection %d: %v %v", i, resp, err)
			}
			resp.Body.Close()
			c.SetDeadline(time.Time{})
		}
		time.Sleep(time.Second)
		closed := 0
		for _, c := range conns[:14] {
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err != nil && !strings.Contains(err.Error(), "timeout") {
				closed++
			}
		}
		if closed < 2 || closed > 3 {
			t.Errorf("%d of 14 idle connections closed under pressure, want those over 3/4 of Max (2 or 3)", closed)
		}
		fresh := dialFrom(t, "127.0.3.1", addr)
		conns = append(conns, fresh)
		if got := get(fresh, "/v1/models"); got != 200 {
			t.Errorf("a new connection after the idle ones closed: %d, want 200", got)
		}
	})

	// Clients holding connections they do not use (each at its
	// per-client bound) leave only the reserve: a burst of new clients
	// displaces them, none refused, while keep-alive connections are not
	// displaced (closing one would race with its client's next request).
	t.Run("hogs displaced", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 32, PerClient: 8, Reserve: 2, IdleTimeout: 4 * time.Second})
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := range 30 { // 8, 8, 8 and 6 from four hogs
			conns = append(conns, dialFrom(t, fmt.Sprintf("127.0.6.%d", i/8+1), addr))
		}
		time.Sleep(100 * time.Millisecond)
		// One more, in the reserve (no other is idle long enough yet).
		conns = append(conns, dialFrom(t, "127.0.6.4", addr))
		time.Sleep(1200 * time.Millisecond) // idle past IdleTimeout/4, not yet swept
		// A burst of new clients; the first displaces two.
		for i := range 8 {
			c := dialFrom(t, fmt.Sprintf("127.0.7.%d", i+1), addr)
			conns = append(conns, c)
			if got := get(c, "/v1/models"); got != 200 {
				t.Errorf("new client %d while hogs hold every slot but the reserve: %d, want 200", i, got)
			}
		}
		// The hogs let go; 22 more clients keep a connection alive each,
		// and a hog tries again: it displaces none of the keep-alive
		// connections and falls into the reserve.
		for _, c := range conns[:31] {
			c.Close()
		}
		for i := range 22 {
			c := dialFrom(t, fmt.Sprintf("127.0.8.%d", i+1), addr)
			conns = append(conns, c)
			if got := get(c, "/v1/models"); got != 200 {
				t.Fatalf("client %d: %d", i, got)
			}
		}
		time.Sleep(1200 * time.Millisecond) // idle past IdleTimeout/4
		c := dialFrom(t, "127.0.6.1", addr)
		conns = append(conns, c)
		if got := get(c, "/v1/models"); got != 503 {
			t.Errorf("a hog's connection among keep-alive ones: %d, want 503", got)
		}
		for i, c := range conns[31:61] {
			if got := get(c, "/v1/models"); got != 200 {
				t.Errorf("client %d's keep-alive connection after the hog's try: %d, want 200", i, got)
			}
		}
	})

	// Clients holding many keep-alive connections they have used leave
	// only the reserve: new clients displace the idle ones of the
	// clients over their fair share (over PerClient/2), the busiest
	// first, and none of a client within it.
	t.Run("keep-alive hogs displaced", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 32, PerClient: 12, Reserve: 2, IdleTimeout: 4 * time.Second})
		var hogs, modest, conns []net.Conn
		defer func() {
			for _, c := range append(append(hogs, modest...), conns...) {
				c.Close()
			}
		}()
		for i := range 30 { // 12 and 12 from two hogs, 6 from a modest client: every slot but the reserve
			src := fmt.Sprintf("127.0.11.%d", i/12+1)
			if i >= 24 {
				src = "127.0.12.1"
			}
			c := dialFrom(t, src, addr)
			if got := get(c, "/v1/models"); got != 200 {
				t.Fatalf("connection %d: %d", i, got)
			}
			if i < 24 {
				hogs = append(hogs, c)
			} else {
				modest = append(modest, c)
			}
		}
		time.Sleep(1200 * time.Millisecond) // idle past IdleTimeout/4, not yet swept
		for i := range 8 {
			c := dialFrom(t, fmt.Sprintf("127.0.13.%d", i+1), addr)
			conns = append(conns, c)
			if got := get(c, "/v1/models"); got != 200 {
				t.Errorf("new client %d while keep-alive hogs hold every slot but the reserve: %d, want 200", i, got)
			}
		}
		for i, c := range modest {
			if got := get(c, "/v1/models"); got != 200 {
				t.Errorf("the modest client's keep-alive connection %d: %d, want 200", i, got)
			}
		}
		alive := [2]int{}
		for i, c := range hogs {
			if get(c, "/v1/models") == 200 {
				alive[i/12]++
			}
		}
		if alive != [2]int{8, 8} {
			t.Errorf("the hogs kept %v keep-alive connections, want [8 8] (the busiest displaced first)", alive)
		}
	})

	// A burst of fresh connections fills every slot but the reserve: a
	// new client's request in the reserve waits for them to be idle long
	// enough to be displaced rather than being refused.
	t.Run("fresh burst waited out", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 32, PerClient: 32, Reserve: 2, IdleTimeout: 4 * time.Second})
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := range 30 {
			conns = append(conns, dialFrom(t, fmt.Sprintf("127.0.14.%d", i/10+1), addr))
		}
		time.Sleep(100 * time.Millisecond) // accepted, well within IdleTimeout/4
		c := dialFrom(t, "127.0.15.1", addr)
		conns = append(conns, c)
		start := time.Now()
		if got := get(c, "/v1/models"); got != 200 {
			t.Errorf("a new client among fresh connections: %d, want 200", got)
		}
		t.Logf("answered after %s", time.Since(start).Round(time.Millisecond))
	})

	// Under pressure the sweep closes the connections that sent nothing
	// first, and keep-alive ones only while more than 3/4 of Max are
	// open still.
	t.Run("sweep spares keep-alive", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 16, PerClient: 16, Reserve: 2, IdleTimeout: 300 * time.Millisecond})
		var kept, unused []net.Conn
		defer func() {
			for _, c := range append(kept, unused...) {
				c.Close()
			}
		}()
		for i := range 6 {
			c := dialFrom(t, fmt.Sprintf("127.0.9.%d", i+1), addr)
			kept = append(kept, c)
			if got := get(c, "/v1/models"); got != 200 {
				t.Fatalf("client %d: %d", i, got)
			}
		}
		for range 8 { // 14 open, over 3/4 of 16
			unused = append(unused, dialFrom(t, "127.0.10.1", addr))
		}
		time.Sleep(time.Second)
		for i, c := range unused {
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
				t.Errorf("connection %d that sent nothing is still open under pressure", i)
			}
		}
		for i, c := range kept {
			if got := get(c, "/v1/models"); got != 200 {
				t.Errorf("keep-alive connection %d once the unused ones closed: %d, want 200", i, got)
			}
		}
	})

	t.Run("max waits", func(t *testing.T) {
		addr := connServer(t, ts, ConnLimits{Max: 4, PerClient: 4, Reserve: 1, IdleTimeout: time.Minute})
		var conns []net.Conn
		for i := range 4 {
			conns = append(conns, dialFrom(t, fmt.Sprintf("127.0.4.%d", i+1), addr))
		}
		time.Sleep(100 * time.Millisecond)
		late := dialFrom(t, "127.0.4.9", addr)
		defer late.Close()
		if got := get(late, "/health"); got != 0 {
			t.Errorf("a fifth connection was served (%d) while four are open", got)
		}
		conns[0].Close()
		if got := get(late, "/health"); got != 200 {
			t.Errorf("the fifth connection after one closed: %d, want 200", got)
		}
		for _, c := range conns[1:] {
			c.Close()
		}
	})
}

// endlessGen streams 200-byte deltas until its context ends, counting
// the bytes it gave.
type endlessGen struct {
	fakeGen
	bytes atomic.Int64
	ended chan struct{}
}

func (g *endlessGen) Stream(ctx context.Context, _ string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return func(yield func(engine.Delta, error) bool) {
		defer func() { g.ended <- struct{}{} }()
		text := strings.Repeat("y", 200)
		for ctx.Err() == nil {
			g.bytes.Add(int64(len(text)))
			if !yield(engine.Delta{Output: engine.Output{NewTokens: []int32{1}, TextDelta: text}}, nil) {
				return
			}
		}
		yield(engine.Delta{}, ctx.Err())
	}
}

func (g *endlessGen) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return g.Stream(ctx, "", p, opts...)
}

// TestSlowReaderDetected: a stream whose client stops reading ends (its
// request aborted) after little more than the socket buffers' worth of
// events and the write timeout, not after MiBs filled the kernel's
// autotuned buffers.
func TestSlowReaderDetected(t *testing.T) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	g := &endlessGen{fakeGen: fakeGen{tok: tok}, ended: make(chan struct{}, 1)}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}}, WriteTimeout: 300 * time.Millisecond,
		Open: func(Spec) (*Model, error) { return &Model{Gen: g}, nil }})
	ts.waitLoaded()
	addr := connServer(t, ts, ConnLimits{})
	c := dialFrom(t, "127.0.0.1", addr)
	defer c.Close()
	body := `{"model":"fake","stream":true,"messages":[{"role":"user","content":"a"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The client reads nothing more.
	select {
	case <-g.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of a client that reads nothing was not ended in 10 s")
	}
	sent := g.bytes.Load()
	t.Logf("%d KiB of text generated before the stream was ended", sent>>10)
	if sent > 1<<20 {
		t.Errorf("%d KiB generated for a client that read nothing; want at most 1 MiB", sent>>10)
	}
}

// TestSlowReaderFreesCells: with the real engine, a stream whose client
// stops reading is ended by the per-event write deadline
// (Config.WriteTimeout) once the socket buffers are full: the request is
// aborted and its KV cells freed within the deadline and a little more,
// long before the answer could have ended by itself.
func TestSlowReaderFreesCells(t *testing.T) {
	const writeTimeout = 500 * time.Millisecond
	cpu, err := kernels.Open("cpu", kernels.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cpu.Close() }) // after the server's
	// Each forward pass takes 20 ms or more: the answer (up to the tiny
	// model's 256 positions) would take 5 s.
	opts := tinyOptions()
	opts.Model = []models.Option{models.WithBackend(slowBackend{cpu, 20 * time.Millisecond})}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "tiny", Path: tinyDir}}, WriteTimeout: writeTimeout,
		Open: func(sp Spec) (*Model, error) { return OpenModel(context.Background(), sp.Path, opts) }})
	ts.waitLoaded()
	addr := connServer(t, ts, ConnLimits{SendBuffer: 8 << 10}) // the buffers hold a few dozen events
	before := ts.gen().Stats().Finished["abort"]
	// A client with a small receive buffer (set before the handshake)
	// that reads nothing of the answer.
	d := net.Dialer{Timeout: 2 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Big events (20 top logprobs each: 1.4 KiB).
	body := `{"model":"tiny","stream":true,"max_tokens":900,"ignore_eos":true,"logprobs":true,"top_logprobs":20,"messages":[{"role":"user","content":"a"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	start := time.Now()
	for ts.gen().Stats().KVUsed == 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the request did not start in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	for {
		st := ts.gen().Stats()
		if st.Running == 0 && st.Waiting == 0 {
			if st.Finished["abort"] != before+1 {
				t.Fatalf("the request ended other than by abort: %v (the buffers never filled?)", st.Finished)
			}
			break
		}
		if time.Since(start) > writeTimeout+2*time.Second {
			t.Fatalf("a stream whose client reads nothing still runs after %s (write timeout %s): %+v", time.Since(start), writeTimeout, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("ended after %s", time.Since(start).Round(time.Millisecond))
	ts.settle() // and its cells are free
}

// slowBackend sleeps before each forward pass's embedding lookup.
type slowBackend struct {
	kernels.Backend
	delay time.Duration
}

func (b slowBackend) GetRows(dst, table, ids kernels.Tensor) {
	time.Sleep(b.delay)
	b.Backend.GetRows(dst, table, ids)
}
