package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics under vLLM's names, each
// with a model_name label. Gauges and counters are read from each model's
// engine.Stats at scrape time (statsCollector), so nothing is counted
// twice; latency histograms are observed by the handlers.
type metrics struct {
	reg  *prometheus.Registry
	ttft *prometheus.HistogramVec
	tpot *prometheus.HistogramVec
	itl  *prometheus.HistogramVec
	e2e  *prometheus.HistogramVec
	// Per choice, at its end, as vLLM's (which runs each choice of n as
	// a request): its tokens and its phases (engine.Timing).
	promptToks, genToks    *prometheus.HistogramVec
	queue, prefill, decode *prometheus.HistogramVec

	mu  sync.Mutex
	per map[string]*modelMetrics
}

// modelMetrics are the histograms of one model label.
type modelMetrics struct {
	ttft, tpot, itl, e2e   prometheus.Observer
	promptToks, genToks    prometheus.Observer
	queue, prefill, decode prometheus.Observer
}

var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	// tokenBuckets are vLLM's 1-2-5 series (build_1_2_5_buckets), to a
	// million tokens.
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000}
)

func newMetrics(s *Server) *metrics {
	hist := func(name, help string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, []string{"model_name"})
	}
	m := &metrics{
		reg:        prometheus.NewRegistry(),
		ttft:       hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		tpot:       hist("vllm:time_per_output_token_seconds", "Histogram of the mean time per output token of a request in seconds.", tpotBuckets),
		itl:        hist("vllm:inter_token_latency_seconds", "Histogram of the time between two output tokens in seconds.", tpotBuckets),
		e2e:        hist("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", e2eBuckets),
		promptToks: hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokenBuckets),
		genToks:    hist("vllm:request_generation_tokens", "Number of generation tokens processed.", tokenBuckets),
		queue:      hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets),
		prefill:    hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", e2eBuckets),
		decode:     hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", e2eBuckets),
		per:        map[string]*modelMetrics{},
	}
	m.reg.MustRegister(m.ttft, m.tpot, m.itl, m.e2e, m.promptToks, m.genToks, m.queue, m.prefill, m.decode,
		&statsCollector{s}, &cacheConfigCollector{s})
	return m
}

// replayed is mm for a reply from the inference cache: the end-to-end
// latency and the token counts only.
func (mm *modelMetrics) replayed() *modelMetrics {
	if mm == nil {
		return nil
	}
	return &modelMetrics{ttft: discard{}, tpot: discard{}, itl: discard{}, e2e: mm.e2e,
		promptToks: mm.promptToks, genToks: mm.genToks, queue: discard{}, prefill: discard{}, decode: discard{}}
}

// discard is an Observer that keeps nothing.
type discard struct{}

func (discard) Observe(float64) {}

// model returns the histograms of a model label.
func (m *metrics) model(name string) *modelMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	mm := m.per[name]
	if mm == nil {
		mm = &modelMetrics{ttft: m.ttft.WithLabelValues(name), tpot: m.tpot.WithLabelValues(name),
			itl: m.itl.WithLabelValues(name), e2e: m.e2e.WithLabelValues(name),
			promptToks: m.promptToks.WithLabelValues(name), genToks: m.genToks.WithLabelValues(name),
			queue: m.queue.WithLabelValues(name), prefill: m.prefill.WithLabelValues(name), decode: m.decode.WithLabelValues(name)}
		m.per[name] = mm
	}
	return mm
}

var (
	descRunning  = prometheus.NewDesc("vllm:num_requests_running", "Number of requests in model execution batches.", []string{"model_name"}, nil)
	descWaiting  = prometheus.NewDesc("vllm:num_requests_waiting", "Number of requests waiting to be processed.", []string{"model_name"}, nil)
	descKVUsage  = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage: the cells that cannot be reused without eviction (running requests'). 1 means 100 percent usage.", []string{"model_name"}, nil)
	descKVKept   = prometheus.NewDesc("vkllm:prefix_cache_usage_perc", "KV cells held only by cached prefixes and idle sessions, which eviction frees. 1 means 100 percent of the cache.", []string{"model_name"}, nil)
	descPrompt   = prometheus.NewDesc("vllm:prompt_tokens_total", "Number of prefill tokens processed.", []string{"model_name"}, nil)
	descGen      = prometheus.NewDesc("vllm:generation_tokens_total", "Number of generation tokens processed.", []string{"model_name"}, nil)
	descPreempt  = prometheus.NewDesc("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.", []string{"model_name"}, nil)
	descPQueries = prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", []string{"model_name"}, nil)
	descPHits    = prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", []string{"model_name"}, nil)
	descICHits   = prometheus.NewDesc("vkllm:inference_cache_hits_total", "Requests answered from the inference cache, with no forward pass.", []string{"model_name"}, nil)
	descICBytes  = prometheus.NewDesc("vkllm:inference_cache_bytes", "Heap bytes held by the inference cache's stored answers (an upper bound: allocator size classes and per-entry overheads counted).", []string{"model_name"}, nil)
	descSuccess  = prometheus.NewDesc("vllm:request_success_total", "Count of finished requests by finish reason.", []string{"model_name", "finished_reason"}, nil)
	// The speculative decoding counters (engine.Stats.DraftTokens and
	// DraftAccepted); 0 for a model served without drafts.
	descDraft    = prometheus.NewDesc("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", []string{"model_name"}, nil)
	descAccepted = prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", []string{"model_name"}, nil)
	// descLoRA is vLLM's LoRA gauge, which the Kubernetes inference
	// gateway reads: its value is the time of the sample (Unix seconds),
	// its labels the adapters of the running and of the waiting requests
	// (comma-separated names) and the most adapters one batch may run
	// (every loaded one, here). Only models with adapters have it.
	descLoRA = prometheus.NewDesc("vllm:lora_requests_info", "Running stats on lora requests.",
		[]string{"model_name", "running_lora_adapters", "waiting_lora_adapters", "max_lora"}, nil)
)

// statsCollector exports every loaded model's engine.Stats.
type statsCollector struct{ s *Server }

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descKVUsage, descKVKept, descPrompt, descGen, descPreempt, descPQueries, descPHits, descICHits, descICBytes, descSuccess, descDraft, descAccepted, descLoRA} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, nm := range c.s.loadedModels() {
		st := nm.m.Gen.Stats()
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, nm.name)
		}
		cnt := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), nm.name)
		}
		g(descRunning, float64(st.Running))
		g(descWaiting, float64(st.Waiting))
		g(descKVUsage, st.KVUsage())
		g(descKVKept, st.KVRetainedUsage())
		cnt(descPrompt, st.PromptTokens)
		cnt(descGen, st.GenerationTokens)
		cnt(descPreempt, st.Preemptions)
		cnt(descPQueries, st.PrefixQueries)
		cnt(descPHits, st.PrefixHits)
		cnt(descICHits, st.InferenceCacheHits)
		g(descICBytes, float64(st.InferenceCacheBytes))
		cnt(descDraft, st.DraftTokens)
		cnt(descAccepted, st.DraftAccepted)
		for _, reason := range []string{"stop", "length", "abort"} {
			ch <- prometheus.MustNewConstMetric(descSuccess, prometheus.CounterValue, float64(st.Finished[reason]), nm.name, reason)
		}
		for reason, v := range st.Finished {
			if reason != "stop" && reason != "length" && reason != "abort" {
				ch <- prometheus.MustNewConstMetric(descSuccess, prometheus.CounterValue, float64(v), nm.name, reason)
			}
		}
		if n := len(nm.m.Adapters); n > 0 {
			now := float64(time.Now().UnixNano()) / 1e9
			ch <- prometheus.MustNewConstMetric(descLoRA, prometheus.GaugeValue, now, nm.name,
				strings.Join(st.RunningAdapters, ","), strings.Join(st.WaitingAdapters, ","), strconv.Itoa(n))
		}
	}
}
