package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestServeSIGTERMUnderLoad: 64 clients stream chat completions; SIGTERM
// arrives mid-load. Every request the server accepted (answered 200)
// ends with [DONE] and no error event; the requests sent after it are
// refused at the connection, never cut; /ready turned 503 first; the
// drain ends well within --drain and the command exits 0.
func TestServeSIGTERMUnderLoad(t *testing.T) {
	const clients = 64
	const drain = 30 * time.Second
	intr := make(chan os.Signal, 1)
	base, log, done := startServe(t, intr, "--drain", drain.String(), "--max-pending", "256")
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	if resp, err := hc.Get(base + "/ready"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/ready before the signal: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	var signalled atomic.Bool
	var accepted, completed, refused, other atomic.Int64
	var mu sync.Mutex
	var samples []string
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(samples) < 5 {
			samples = append(samples, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for {
				body := fmt.Sprintf(`{"model":"tiny","stream":true,"max_tokens":16,"seed":%d,"messages":[{"role":"user","content":"tell me about the sea"}]}`, c)
				req, _ := http.NewRequestWithContext(context.Background(), "POST", base+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					if signalled.Load() { // the listener is closed: refused, not accepted
						refused.Add(1)
						return
					}
					other.Add(1)
					note("before the signal: %v", err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					other.Add(1)
					note("status %d", resp.StatusCode)
					resp.Body.Close()
					return
				}
				accepted.Add(1)
				sc := bufio.NewScanner(resp.Body)
				ok := false
				for sc.Scan() {
					line := sc.Text()
					if strings.Contains(line, `"error"`) {
						note("error event: %s", line)
						break
					}
					if line == "data: [DONE]" {
						ok = true
						break
					}
				}
				resp.Body.Close()
				if !ok {
					note("accepted request cut: %v", sc.Err())
					continue
				}
				completed.Add(1)
			}
		})
	}
	time.Sleep(time.Second)
	if accepted.Load() == 0 {
		t.Fatalf("no request accepted in a second of load\n%s", log.String())
	}
	signalled.Store(true)
	start := time.Now()
	intr <- syscall.SIGTERM
	var code int
	select {
	case code = <-done:
	case <-time.After(drain):
		t.Fatalf("still draining after --drain %s\n%s", drain, log.String())
	}
	took := time.Since(start)
	wg.Wait()
	t.Logf("%d clients: %d requests accepted, %d completed, %d refused after SIGTERM, %d other errors; drained in %s",
		clients, accepted.Load(), completed.Load(), refused.Load(), other.Load(), took.Round(time.Millisecond))
	for _, s := range samples {
		t.Errorf("%s", s)
	}
	if lost := accepted.Load() - completed.Load(); lost != 0 || other.Load() != 0 {
		t.Errorf("%d accepted requests lost, %d other errors", lost, other.Load())
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	l := log.String()
	if i, j := strings.Index(l, "msg=\"not ready"), strings.Index(l, "draining requests"); i < 0 || j < 0 || i > j {
		t.Errorf("/ready did not turn 503 before the drain began:\n%s", l)
	}
}
