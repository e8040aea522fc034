package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/cpu" // the tests run on "cpu"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/server"
)

// The endpoint picker's default metric names for a vLLM model server
// (the protocol's table, docs/proposals/003-model-server-protocol).
const (
	metricWaiting     = "vllm:num_requests_waiting"
	metricRunning     = "vllm:num_requests_running"
	metricKVUsage     = "vllm:kv_cache_usage_perc"
	metricLoRA        = "vllm:lora_requests_info"
	metricCacheConfig = "vllm:cache_config_info"
)

// recorded is the engine as the server sees it, noting each Stats
// snapshot it hands out: the state a scrape reported.
type recorded struct {
	*engine.LLM
	mu    sync.Mutex
	snaps []engine.Stats
}

func (r *recorded) Stats() engine.Stats {
	st := r.LLM.Stats()
	r.mu.Lock()
	r.snaps = append(r.snaps, st)
	r.mu.Unlock()
	return st
}

// take returns the snapshots since the last take.
func (r *recorded) take() []engine.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snaps
	r.snaps = nil
	return s
}

// endpoint is what the endpoint picker reads of one scrape (its
// MetricsState's fields).
type endpoint struct {
	waiting, running int
	kvUsage          float64
	active, queued   []string // LoRA adapters, sorted
	maxLoRA          int
	loraStamp        float64
	blockSize        int
	numBlocks        int
	families         map[string]*dto.MetricFamily
}

// scrape GETs /metrics and reads it as the endpoint picker does: the text
// format parsed with expfmt's TextParser (legacy name validation), each
// gauge's value, the first series of a family (none carries a
// timestamp), the LoRA series with the largest value among those with a
// running or waiting adapter, and cache_config_info's labels as integers.
func scrape(hc *http.Client, url string) (*endpoint, error) {
	resp, err := hc.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	first := func(name string) (*dto.Metric, error) {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			return nil, fmt.Errorf("metric family %q not found", name)
		}
		if f.GetType() != dto.MetricType_GAUGE {
			return nil, fmt.Errorf("%s is a %s, want a gauge", name, f.GetType())
		}
		return f.GetMetric()[0], nil
	}
	ep := &endpoint{families: fams}
	for _, g := range []struct {
		name string
		set  func(float64)
	}{
		{metricWaiting, func(v float64) { ep.waiting = int(v) }},
		{metricRunning, func(v float64) { ep.running = int(v) }},
		{metricKVUsage, func(v float64) { ep.kvUsage = v }},
	} {
		m, err := first(g.name)
		if err != nil {
			return nil, err
		}
		g.set(m.GetGauge().GetValue())
	}
	cc, err := first(metricCacheConfig)
	if err != nil {
		return nil, err
	}
	for _, l := range cc.GetLabel() {
		switch l.GetName() {
		case "block_size":
			ep.blockSize, err = strconv.Atoi(l.GetValue())
		case "num_gpu_blocks":
			ep.numBlocks, err = strconv.Atoi(l.GetValue())
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", metricCacheConfig, err)
		}
	}
	lf, ok := fams[metricLoRA]
	if !ok {
		return nil, fmt.Errorf("metric family %q not found", metricLoRA)
	}
	ep.maxLoRA = -1
	for _, m := range lf.GetMetric() {
		var run, wait, max string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "running_lora_adapters":
				run = l.GetValue()
			case "waiting_lora_adapters":
				wait = l.GetValue()
			case "max_lora":
				max = l.GetValue()
			}
		}
		if n, err := strconv.Atoi(max); err == nil {
			ep.maxLoRA = n
		}
		if v := m.GetGauge().GetValue(); (run != "" || wait != "") && v > ep.loraStamp {
			ep.loraStamp, ep.active, ep.queued = v, split(run), split(wait)
		}
	}
	return ep, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.Split(s, ",")
	slices.Sort(l)
	return l
}

// counter is a counter's value in a scrape (-1 when missing).
func (ep *endpoint) counter(name string, labels ...string) float64 {
	f := ep.families[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				continue next
			}
		}
		return m.GetCounter().GetValue()
	}
	return -1
}

// matches reports how ep differs from the engine's snapshot st ("" when
// every value agrees).
func (ep *endpoint) matches(st engine.Stats) string {
	var diff []string
	check := func(name string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			diff = append(diff, fmt.Sprintf("%s %v, engine %v", name, got, want))
		}
	}
	check(metricWaiting, ep.waiting, st.Waiting)
	check(metricRunning, ep.running, st.Running)
	// The running requests' cells only: retained prefixes can be evicted.
	check(metricKVUsage, ep.kvUsage, float64(st.KVUsed-st.KVRetained)/float64(st.KVCells))
	check("running_lora_adapters", ep.active, split(strings.Join(st.RunningAdapters, ",")))
	check("waiting_lora_adapters", ep.queued, split(strings.Join(st.WaitingAdapters, ",")))
	check("vllm:prompt_tokens_total", ep.counter("vllm:prompt_tokens_total"), float64(st.PromptTokens))
	check("vllm:generation_tokens_total", ep.counter("vllm:generation_tokens_total"), float64(st.GenerationTokens))
	check("vllm:num_preemptions_total", ep.counter("vllm:num_preemptions_total"), float64(st.Preemptions))
	check("vllm:prefix_cache_queries_total", ep.counter("vllm:prefix_cache_queries_total"), float64(st.PrefixQueries))
	check("vllm:prefix_cache_hits_total", ep.counter("vllm:prefix_cache_hits_total"), float64(st.PrefixHits))
	for _, r := range []string{"stop", "length", "abort"} {
		check("vllm:request_success_total{"+r+"}", ep.counter("vllm:request_success_total", "finished_reason", r), float64(st.Finished[r]))
	}
	return strings.Join(diff, "; ")
}

// TestModelServerProtocol serves the tiny model with two LoRA adapters,
// drives it with 64 streaming clients (base model and adapters mixed),
// and scrapes /metrics as the endpoint picker does all the while. Each
// scrape must agree, value for value, with the engine's state the scrape
// read (engine.Stats, recorded as the server asks for it); the load must
// be visible (requests waiting, running and using KV cells, adapters
// running); and once the clients are done the engine is idle again.
func TestModelServerProtocol(t *testing.T) {
	const clients, maxSeqs = 64, 4
	duration := 4 * time.Second
	if testing.Short() {
		duration = 1500 * time.Millisecond
	}
	adapters := map[string]string{"a": "../testdata/lora/qwen2-tiny-lora-a", "b": "../testdata/lora/qwen2-tiny-lora-b"}
	opts := engine.Options{ContextLen: 1024, MaxSeqs: maxSeqs, MaxPending: 2 * clients, Adapters: adapters,
		Model: []models.Option{models.WithBackendName("cpu", kernels.Options{})}}
	var rec *recorded
	srv, err := server.New(server.Config{
		Models: []server.Spec{{Name: "tiny", Path: "../testdata/models/qwen2-tiny"}},
		Open: func(s server.Spec) (*server.Model, error) {
			m, err := server.OpenModel(context.Background(), s.Path, opts)
			if err != nil {
				return nil, err
			}
			rec = &recorded{LLM: m.Gen.(*engine.LLM)}
			m.Gen = rec
			return m, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: clients + 1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var inFlight, done, failed atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for ctx.Err() == nil {
				model := []string{"tiny", "tiny:a", "tiny:b"}[rng.IntN(3)]
				inFlight.Add(1)
				err := stream(ctx, hc, hs.URL, model, rng)
				inFlight.Add(-1)
				switch {
				case err == nil:
					done.Add(1)
				case ctx.Err() == nil:
					failed.Add(1)
					t.Errorf("client %d: %v", c, err)
				}
			}
		})
	}

	var scrapes int
	var sawWaiting, sawRunning, sawKV, sawAdapter bool
	for ctx.Err() == nil {
		rec.take()
		before := inFlight.Load()
		ep, err := scrape(hc, hs.URL)
		snaps := rec.take()
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		scrapes++
		var diffs []string
		ok := false
		for _, st := range snaps {
			d := ep.matches(st)
			ok = ok || d == ""
			diffs = append(diffs, d)
		}
		if !ok {
			t.Errorf("scrape %d agrees with none of the engine's %d snapshots: %q", scrapes, len(snaps), diffs)
		}
		if ep.blockSize != engine.BlockSize || ep.numBlocks != snaps[0].KVCells/engine.BlockSize || ep.numBlocks == 0 {
			t.Errorf("cache_config_info block_size %d num_gpu_blocks %d; engine: %d cells in blocks of %d", ep.blockSize, ep.numBlocks, snaps[0].KVCells, engine.BlockSize)
		}
		if ep.maxLoRA != len(adapters) {
			t.Errorf("max_lora %d, want %d", ep.maxLoRA, len(adapters))
		}
		if ep.running > maxSeqs || ep.running+ep.waiting > clients || ep.kvUsage < 0 || ep.kvUsage > 1 {
			t.Errorf("running %d (max %d), waiting %d, for %d clients (%d in flight at the scrape's start); KV usage %g",
				ep.running, maxSeqs, ep.waiting, clients, before, ep.kvUsage)
		}
		if now := float64(time.Now().UnixNano()) / 1e9; ep.loraStamp != 0 && (ep.loraStamp > now || ep.loraStamp < now-5) {
			t.Errorf("lora_requests_info's value %f is not the time of the scrape (%f)", ep.loraStamp, now)
		}
		sawWaiting = sawWaiting || ep.waiting > 0
		sawRunning = sawRunning || ep.running > 0
		sawKV = sawKV || ep.kvUsage > 0
		sawAdapter = sawAdapter || len(ep.active) > 0
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("%d clients, %s: %d requests done, %d failed, %d scrapes", clients, duration, done.Load(), failed.Load(), scrapes)
	if !sawWaiting || !sawRunning || !sawKV || !sawAdapter {
		t.Errorf("the load was not seen: waiting %v, running %v, KV in use %v, an adapter running %v", sawWaiting, sawRunning, sawKV, sawAdapter)
	}
	if done.Load() == 0 {
		t.Error("no request finished")
	}

	// Idle: nothing running or waiting, no cell in use by a request,
	// though cached prefixes may keep cells.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ep, err := scrape(hc, hs.URL)
		if err != nil {
			t.Fatal(err)
		}
		if ep.running == 0 && ep.waiting == 0 && ep.kvUsage == 0 && len(ep.active)+len(ep.queued) == 0 {
			st := rec.LLM.Stats()
			if d := ep.matches(st); d != "" {
				t.Errorf("idle: %s", d)
			}
			t.Logf("idle: KV cells %d used, %d of them retained prefixes", st.KVUsed, st.KVRetained)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not idle after the load: running %d, waiting %d, KV usage %g, adapters %v %v", ep.running, ep.waiting, ep.kvUsage, ep.active, ep.queued)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stream runs one streaming chat request to its [DONE]; ctx's end is not
// an error.
func stream(ctx context.Context, hc *http.Client, url, model string, rng *rand.Rand) error {
	words := []string{"Tell", "me", "about", "the", "sea", "and", "the", "mountains", "in", "spring"}
	body, _ := json.Marshal(map[string]any{
		"model": model, "stream": true, "max_tokens": 8 + rng.IntN(16), "temperature": 0.8, "seed": rng.Int64(),
		"messages": []map[string]string{{"role": "user", "content": strings.Join(words[:1+rng.IntN(len(words))], " ")}},
	})
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", model, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s: the stream ended without [DONE]", model)
}
