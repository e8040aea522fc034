package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/server"
)

// The load test's knobs; the defaults make a short run that go test
// affords. A longer one by hand:
//
//	go test ./server -run TestLoad -v -load.clients 64 -load.duration 60s -load.max-tokens 64
//	go test ./server -run TestLoad -v -load.url http://127.0.0.1:8080 -load.name smollm2
var (
	loadModel      = flag.String("load.model", "../testdata/models/qwen2-tiny", "model to serve in-process (folder or .gguf)")
	loadURL        = flag.String("load.url", "", "base URL of a running server to drive instead")
	loadName       = flag.String("load.name", "m", "model name in requests")
	loadClients    = flag.Int("load.clients", 16, "concurrent streaming clients")
	loadDuration   = flag.Duration("load.duration", 2*time.Second, "how long to run (at most 10m)")
	loadCancel     = flag.Float64("load.cancel", 0.2, "probability that a client goes away mid-answer")
	loadMaxTokens  = flag.Int("load.max-tokens", 16, "max_tokens per request")
	loadMaxPending = flag.Int("load.max-pending", 8, "in-process: engine queue bound (429 beyond)")
	loadMaxSeqs    = flag.Int("load.max-seqs", 4, "in-process: requests running at once")
	loadCtx        = flag.Int("load.ctx", 1024, "in-process: KV cells, shared by the running requests")
	loadCacheBytes = flag.Int64("load.cache-bytes", 16<<20, "in-process: engine.Options.CacheBytes, the inference cache's bound (it stays full after the run)")
	loadStalled    = flag.Float64("load.stalled", 0, "fraction of the clients that are hostile: each sends all but the last byte of a 1 MiB body and stalls, again and again")
	loadBodyWait   = flag.Duration("load.body-timeout", 0, "in-process: Config.BodyTimeout (0: the default)")
	loadHostile    = flag.Float64("load.hostile", 0, "fraction of the clients that are hostile, each from its own loopback address, in turn: many tiny messages, a huge embedding input, n choices of one token, a hog of keep-alive connections, a stream it stops reading")
)

// TestLoad drives the server with concurrent streaming clients for a
// bounded time and checks that nothing is lost. Each client loops: a
// streaming chat request with include_usage; with probability
// -load.cancel it goes away after a random number of chunks. At the
// deadline every client goes away (requests still running are aborted and
// counted apart). 429 answers are expected (the queue bound,
// -load.max-pending) and counted apart. A request is lost when its stream
// ends without [DONE] or an error event and the client did not cancel
// it. The test fails on any error other than 429 or a lost request, and,
// in-process, when the engine did not finish every request it accepted,
// keeps a KV cell in use afterwards, or the heap does not return near
// idle (within 64 MiB; the inference cache, which keeps the seeded
// requests' answers, is bounded by -load.cache-bytes for this, as its
// default bound, a share of the machine's memory, is larger). The report (throughput, time to first
// token) is in the -v log. With -load.stalled, that fraction of the
// clients only stall request bodies; with -load.hostile, that fraction
// are hostile in the ways of the second hardening round (see hostile);
// the report is of the others. Run it with and without to compare:
//
//	go test ./server -run TestLoad -v -load.clients 80 -load.hostile 0.2 -load.duration 60s
func TestLoad(t *testing.T) {
	duration := min(*loadDuration, 10*time.Minute)
	clients, maxTokens, cancelP, model := *loadClients, *loadMaxTokens, *loadCancel, *loadName
	url := *loadURL
	var srv *server.Server
	if url == "" {
		var err error
		srv, err = server.New(server.Config{Models: []server.Spec{{Name: model, Path: *loadModel}}, BodyTimeout: *loadBodyWait,
			Engine: engine.Options{MaxSeqs: *loadMaxSeqs, MaxPending: *loadMaxPending, ContextLen: *loadCtx, CacheBytes: *loadCacheBytes,
				Model: []models.Option{models.WithBackendName("cpu", kernels.Options{})}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if err := srv.WaitLoaded(context.Background()); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewUnstartedServer(srv.Handler())
		hs.Listener = srv.Listen(hs.Config, hs.Listener, server.ConnLimits{})
		hs.Start()
		defer hs.Close()
		url = hs.URL
	}
	heapBefore := heapInUse()
	before := engine.Stats{}
	if srv != nil {
		before = srv.Stats(model)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var st stats
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	t0 := time.Now()
	var wg sync.WaitGroup
	stalled := int(*loadStalled * float64(clients))
	var cuts atomic.Int64 // stalled bodies the server gave up on
	for range stalled {
		wg.Go(func() {
			for ctx.Err() == nil {
				if stall(ctx, url) {
					cuts.Add(1)
				}
			}
		})
	}
	clients -= stalled
	hostileN := int(*loadHostile * float64(clients))
	var hostileDone atomic.Int64
	for k := range hostileN {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				hostile(ctx, url, model, k, i, min(*loadMaxSeqs, server.MaxN))
				hostileDone.Add(1)
			}
		})
	}
	clients -= hostileN
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			for ctx.Err() == nil {
				one(ctx, hc, url, model, maxTokens, rng, cancelP, &st)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	tr.CloseIdleConnections()

	slices.Sort(st.ttft)
	pct := func(p float64) time.Duration {
		if len(st.ttft) == 0 {
			return 0
		}
		return st.ttft[min(len(st.ttft)-1, int(p*float64(len(st.ttft))))]
	}
	t.Logf("clients %d, duration %s, max_tokens %d, cancel p %.2f", clients, elapsed.Round(time.Millisecond), maxTokens, cancelP)
	if stalled > 0 {
		t.Logf("stalled clients %d besides: %d stalled bodies cut by the server", stalled, cuts.Load())
	}
	if hostileN > 0 {
		t.Logf("hostile clients %d besides: %d attacks made", hostileN, hostileDone.Load())
	}
	t.Logf("requests: %d started, %d completed, %d cancelled by the client at random, %d dropped at the deadline, %d answered 429, %d other errors, %d lost",
		st.started, st.completed, st.cancelled, st.cutAtDeadline, st.tooMany, st.otherErrors, st.lost)
	t.Logf("throughput: %.1f requests/s finished (completed+cancelled), %.1f tokens/s streamed",
		float64(st.completed+st.cancelled)/elapsed.Seconds(), float64(st.tokens)/elapsed.Seconds())
	t.Logf("TTFT: p50 %s, p99 %s (n=%d)", pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), len(st.ttft))
	for _, e := range st.errSamples {
		t.Errorf("error sample: %s", e)
	}
	if st.otherErrors > 0 || st.lost > 0 {
		t.Errorf("%d errors other than 429, %d requests lost", st.otherErrors, st.lost)
	}
	if st.completed == 0 {
		t.Errorf("no request completed in %s", elapsed)
	}
	if srv == nil {
		return
	}
	// Every request the engine accepted must finish; no cell stays in use.
	deadline := time.Now().Add(10 * time.Second)
	var after engine.Stats
	for {
		after = srv.Stats(model)
		if after.Running == 0 && after.Waiting == 0 && after.KVUsed != 0 {
			srv.ClearCache(model) // cached prefixes are not leaks; what stays after clearing is
			after = srv.Stats(model)
		}
		if after.Running == 0 && after.Waiting == 0 && after.KVUsed == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.CloseIdleConnections()
	hs := heapInUse()
	for end := time.Now().Add(5 * time.Second); hs > heapBefore+64<<20 && time.Now().Before(end); hs = heapInUse() {
		time.Sleep(100 * time.Millisecond)
	}
	// What stays is the inference cache (seeded requests are kept, up
	// to its bound) and nothing else of note: the margin is smaller than
	// the engine's default bound (DefaultCacheShare of the memory), which
	// the cache reaches after a long enough load, by design.
	ic := srv.Stats(model).InferenceCacheBytes
	t.Logf("heap in use: %d MiB before, %d MiB after, of which the inference cache holds %d MiB (its bound %d MiB)",
		heapBefore>>20, hs>>20, ic>>20, *loadCacheBytes>>20)
	if ic > *loadCacheBytes {
		t.Errorf("the inference cache holds %d bytes, over its bound %d", ic, *loadCacheBytes)
	}
	if hs > heapBefore+64<<20 {
		t.Errorf("the heap did not return near idle: %d MiB before, %d MiB after", heapBefore>>20, hs>>20)
		if f, err := os.Create(filepath.Join(t.ArtifactDir(), "heap.pprof")); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
			t.Logf("heap profile: %s", f.Name())
		}
	}
	fin := 0
	for r, n := range after.Finished {
		fin += int(n - before.Finished[r])
	}
	// A request the client dropped at the deadline before its answer
	// began may have been refused before it reached the engine (its
	// client gone while its body waited to be read).
	accepted := st.started - st.tooMany
	t.Logf("engine: %d requests finished (%v), %d accepted by the server (%d of them dropped unanswered at the deadline); running %d, waiting %d, KV cells used %d/%d, preemptions %d",
		fin, after.Finished, accepted, st.cutUnanswered, after.Running, after.Waiting, after.KVUsed, after.KVCells, after.Preemptions)
	countable := hostileN == 0 // the hostile clients' requests finish in the engine too
	if countable && (fin > accepted || fin < accepted-st.cutUnanswered) || after.KVUsed != 0 || after.Running+after.Waiting != 0 {
		t.Errorf("requests or cells lost in the engine: %d finished of %d accepted, running %d, waiting %d, KV cells used %d",
			fin, accepted, after.Running, after.Waiting, after.KVUsed)
	}
}

// stall sends the head of a POST and all but the last byte of its 1 MiB
// body, and waits until the server closes the connection (it reports
// true) or ctx ends.
func stall(ctx context.Context, url string) bool {
	const size = 1 << 20
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		time.Sleep(10 * time.Millisecond)
		return false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	go c.Write(make([]byte, size-1))
	_, err = io.Copy(io.Discard, c) // the answer (408), then the close
	return ctx.Err() == nil
}

type stats struct {
	mu                            sync.Mutex
	started, completed, cancelled int
	tooMany, otherErrors, lost    int
	cutAtDeadline                 int
	cutUnanswered                 int // of cutAtDeadline, before the answer began: maybe never queued
	tokens                        int
	ttft                          []time.Duration
	errSamples                    []string
}

// cut counts a request the client dropped because the time was up.
func (s *stats) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutAtDeadline++
}

func (s *stats) errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.otherErrors++
	if len(s.errSamples) < 5 {
		s.errSamples = append(s.errSamples, fmt.Sprintf(format, args...))
	}
}

// one runs one streaming request.
func one(ctx context.Context, hc *http.Client, url, model string, maxTokens int, rng *rand.Rand, cancelP float64, st *stats) {
	cancelAfter := -1
	if rng.Float64() < cancelP {
		cancelAfter = rng.IntN(maxTokens/2 + 1)
	}
	words := []string{"Tell", "me", "about", "the", "sea", "and", "the", "mountains", "in", "spring", "please"}
	body, _ := json.Marshal(map[string]any{
		"model": model, "stream": true, "max_tokens": maxTokens, "stream_options": map[string]bool{"include_usage": true},
		"temperature": 0.8, "seed": rng.Int64(),
		"messages": []map[string]string{{"role": "user", "content": strings.Join(words[:1+rng.IntN(len(words))], " ")}},
	})
	rctx, cancel := context.WithCancel(ctx) // at the deadline every client goes away

	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "POST", url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	st.mu.Lock()
	st.started++
	st.mu.Unlock()
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			st.cut()
			st.mu.Lock()
			st.cutUnanswered++
			st.mu.Unlock()
			return
		}
		st.errorf("request: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		io.Copy(io.Discard, resp.Body)
		st.mu.Lock()
		st.tooMany++
		st.mu.Unlock()
		if resp.Header.Get("Retry-After") == "" {
			st.errorf("429 without Retry-After")
		}
		wait := time.Second // as Retry-After says, with jitter
		if v, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			wait = time.Duration(v) * time.Second
		}
		select {
		case <-time.After(wait/2 + time.Duration(rng.Int64N(int64(wait/2)+1))):
		case <-ctx.Done():
		}
		return
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		st.errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	rd := bufio.NewReader(resp.Body)
	chunks, tokens := 0, 0
	var first time.Duration
	for {
		line, err := rd.ReadString('\n')
		if err != nil && ctx.Err() != nil {
			st.cut()
			st.mu.Lock()
			st.tokens += chunks
			st.mu.Unlock()
			return
		}
		if err != nil {
			st.mu.Lock()
			st.lost++
			st.tokens += tokens
			st.mu.Unlock()
			if !errors.Is(err, io.EOF) {
				st.errorf("reading the stream: %v", err)
			}
			return
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			st.mu.Lock()
			st.completed++
			st.tokens += tokens
			st.ttft = append(st.ttft, first)
			st.mu.Unlock()
			return
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content *string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			st.errorf("bad chunk %q: %v", data, err)
			return
		}
		if ch.Error != nil {
			st.errorf("error event: %s", ch.Error.Message)
			return
		}
		if ch.Usage != nil {
			tokens = ch.Usage.CompletionTokens
			continue
		}
		if chunks == 0 {
			first = time.Since(start)
		}
		chunks++
		if cancelAfter >= 0 && chunks > cancelAfter {
			cancel()
			st.mu.Lock()
			st.cancelled++
			st.tokens += chunks
			st.ttft = append(st.ttft, first)
			st.mu.Unlock()
			return
		}
	}
}

// heapInUse is the heap in use after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// hostile makes attack i of hostile client k (from loopback address
// 127.0.9.k+1, so that the server's per-address bounds tell it from the
// honest clients), each of the second hardening round: a body of many
// tiny messages, an embedding input far over the context, n choices of
// one token, 64 keep-alive connections held idle, a stream it stops
// reading. It returns when the attack ended or ctx did.
func hostile(ctx context.Context, url, model string, k, i, n int) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 9, byte(k+1))}, Timeout: 2 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	post := func(path, body string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	switch i % 5 {
	case 0:
		post("/v1/chat/completions", `{"model":"`+model+`","messages":[`+strings.Repeat(`{"role":"user","content":""},`, 100000)+`{"role":"user","content":"a"}]}`)
	case 1:
		post("/v1/embeddings", `{"model":"`+model+`","input":"`+strings.Repeat("the sea ", 1<<18)+`"}`)
	case 2:
		post("/v1/chat/completions", fmt.Sprintf(`{"model":%q,"n":%d,"max_tokens":1,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`, model, n))
	case 3:
		var conns []net.Conn
		for range 64 {
			c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
		for _, c := range conns {
			c.Close()
		}
	case 4:
		c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			return
		}
		defer c.Close()
		body := `{"model":"` + model + `","stream":true,"max_tokens":100000,"ignore_eos":true,"messages":[{"role":"user","content":"talk"}]}`
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		select { // reads nothing: the server's write deadline ends it
		case <-ctx.Done():
		case <-time.After(3 * time.Second):
		}
	}
}
