package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// heapPeak samples the heap in use every 20 ms while run runs and
// returns its largest growth over the heap in use before, in MiB.
func heapPeak(run func()) float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	peak := base
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	run()
	done <- struct{}{}
	<-done
	return float64(peak-base) / (1 << 20)
}

// settleGoroutines waits (at most d) until at most limit goroutines run,
// and returns how many do.
func settleGoroutines(limit int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= limit || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rawPost opens a connection to addr and sends the head of a POST of a
// JSON body of length bytes.
func rawPost(t *testing.T, addr, path string, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length)
	return c
}

// TestSlowClients: clients that stall a body, trickle one, or stop
// reading their stream hold neither memory nor goroutines for longer
// than the server's deadlines.
func TestSlowClients(t *testing.T) {
	const bodyTimeout = time.Second
	ts := newTestServer(t, Config{MaxBodyReads: 4, BodyTimeout: bodyTimeout, WriteTimeout: 500 * time.Millisecond})
	ts.waitLoaded()
	addr := ts.hs.Listener.Addr().String()
	start := runtime.NumGoroutine()

	t.Run("stalled bodies", func(t *testing.T) {
		// 40 clients send all but the last byte of a 4 MiB body and stall.
		const clients, size = 40, 4 << 20
		body := []byte(`{"model":"tiny","messages":[{"role":"user","content":"` + strings.Repeat("a", size-64) + `"}]}`)
		body = append(body, strings.Repeat(" ", size-len(body))...)
		var conns []net.Conn
		var wg sync.WaitGroup
		grew := heapPeak(func() {
			for range clients {
				c := rawPost(t, addr, "/v1/chat/completions", size)
				conns = append(conns, c)
				wg.Go(func() { c.Write(body[:size-1]) }) // blocks while the server does not read
			}
			time.Sleep(bodyTimeout + 500*time.Millisecond)
		})
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
		t.Logf("heap grew by %.0f MiB with %d stalled 4 MiB bodies", grew, clients)
		if grew > 64 {
			t.Errorf("heap grew by %.0f MiB; want at most 64 (4 bodies read at once)", grew)
		}
	})

	t.Run("trickled bodies", func(t *testing.T) {
		// 20 clients send a body one byte every 100 ms.
		base := settleGoroutines(start, 5*time.Second) // the stalled bodies' connections closed
		var wg sync.WaitGroup
		for range 20 {
			c := rawPost(t, addr, "/v1/chat/completions", 1000)
			wg.Go(func() {
				defer c.Close()
				for range 1000 {
					if _, err := c.Write([]byte(" ")); err != nil {
						return // the server gave up on it
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
		}
		n := settleGoroutines(base+2, bodyTimeout+3*time.Second)
		t.Logf("goroutines: %d before, %d %s after the body deadline", base, n, bodyTimeout+3*time.Second)
		if n > base+2 {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines %s after 20 trickled bodies began, %d before: the connections are still open\n%s", n, bodyTimeout+3*time.Second, base, buf[:runtime.Stack(buf, true)])
		}
		wg.Wait()
	})

	t.Run("stream consumers that stop reading", func(t *testing.T) {
		small := httptest.NewUnstartedServer(ts.srv.Handler())
		small.Listener = smallBuffers{small.Listener}
		small.Start()
		defer small.Close()
		base := settleGoroutines(start+1, 5*time.Second) // + small's accept loop
		// Small socket buffers stand for a client that reads nothing: the
		// server's writes fill them and block.
		var conns []net.Conn
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		for range 4 {
			c, err := d.Dial("tcp", small.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			body := `{"model":"tiny","messages":[{"role":"user","content":"talk"}],"max_tokens":900,"ignore_eos":true,"stream":true,"logprobs":true,"top_logprobs":20}`
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
		for _, c := range conns { // the streams began
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			head := make([]byte, 12)
			if _, err := io.ReadFull(c, head); err != nil || string(head) != "HTTP/1.1 200" {
				t.Fatalf("answer %q (%v), want a 200 stream", head, err)
			}
		}
		n := settleGoroutines(base+2, 10*time.Second)
		t.Logf("goroutines: %d before, %d with 4 stalled stream readers", base, n)
		if n > base+2 {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines with 4 streams nobody reads, %d before: their handlers are stuck writing\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
		for i, c := range conns { // what is left to read ends without [DONE]: the server dropped the stream
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			rest, _ := io.ReadAll(c)
			if strings.Contains(string(rest), "data: [DONE]") {
				t.Errorf("stream %d was written to its end (%d bytes) for a client that did not read", i, len(rest))
			}
		}
	})
	ts.settle()
}

// TestHugePrompts: concurrent prompts far longer than the context are
// refused (400) for the memory of their bodies, not of tokenising them.
// postAtOnce posts body to url from clients goroutines at once and
// returns each one's status and how far the heap grew meanwhile (MiB).
func postAtOnce(t *testing.T, url, body string, clients int) ([]int, float64) {
	t.Helper()
	codes := make([]int, clients)
	grew := heapPeak(func() {
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				resp, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		wg.Wait()
	})
	return codes, grew
}

func TestHugePrompts(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	const clients, size = 8, 3 << 20
	body := `{"model":"tiny","messages":[{"role":"user","content":"` + strings.Repeat("the sea ", size/8) + `"}]}`
	codes, grew := postAtOnce(t, ts.hs.URL+"/v1/chat/completions", body, clients)
	t.Logf("heap grew by %.0f MiB with %d concurrent %d MiB prompts", grew, clients, size>>20)
	for i, c := range codes {
		if c != http.StatusBadRequest {
			t.Errorf("client %d: status %d, want 400", i, c)
		}
	}
	// The bodies themselves, read and decoded: about 2 × 8 × 3 MiB.
	if grew > 160 {
		t.Errorf("heap grew by %.0f MiB; want at most 160 (the bodies, not their tokens)", grew)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	ts.settle()
}

// TestTooLargeAtOnce: a Content-Length above the limit is answered 413
// before the body is sent, even to a client that asks for 100-continue.
func TestTooLargeAtOnce(t *testing.T) {
	ts := newTestServer(t, Config{MaxBodyBytes: 1 << 10})
	ts.waitLoaded()
	c, err := net.Dial("tcp", ts.hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2048\r\nExpect: 100-continue\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 413") {
		t.Fatalf("status line %q (%v), want 413 at once", status, err)
	}
}

// smallBuffers is a listener whose connections have a small send buffer.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

var _ = context.Background
