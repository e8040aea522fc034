package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vkllm/vkllm/engine"
)

// descCacheConfig is vLLM's cache_config_info, which the Kubernetes
// inference gateway's prefix-aware scorer reads: an info gauge (value 1)
// whose labels describe the KV cache in blocks of block_size tokens.
//
// vkllm's KV cache is a pool of cells (one token each), not of pages; the
// unit the prefix cache matches and reuses is engine.BlockSize tokens, so
// block_size is engine.BlockSize and num_gpu_blocks is the cells divided
// by it (rounded down): the most whole prefix blocks the cache can hold.
// The name keeps vLLM's "gpu" whatever the backend.
var descCacheConfig = prometheus.NewDesc("vllm:cache_config_info", "Information of the KV cache config: block_size tokens per prefix-cache block, num_gpu_blocks such blocks in the cache.",
	[]string{"model_name", "block_size", "num_gpu_blocks"}, nil)

// cacheConfigCollector exports descCacheConfig for every loaded model.
type cacheConfigCollector struct{ s *Server }

func (c *cacheConfigCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descCacheConfig }

func (c *cacheConfigCollector) Collect(ch chan<- prometheus.Metric) {
	for _, nm := range c.s.loadedModels() {
		size, blocks := cacheBlocks(nm.m.Gen.Stats())
		ch <- prometheus.MustNewConstMetric(descCacheConfig, prometheus.GaugeValue, 1, nm.name,
			strconv.Itoa(size), strconv.Itoa(blocks))
	}
}

// cacheBlocks is the KV cache of st in prefix-cache blocks: the block size
// in tokens and how many whole blocks its cells hold.
func cacheBlocks(st engine.Stats) (blockSize, blocks int) {
	return engine.BlockSize, st.KVCells / engine.BlockSize
}
