package server

// The tests open models on the CPU backends (kernels.Auto falls back to
// "cpu"; the examples run on "cpu-ref"): a package that opens models
// imports the backends it wants, as database/sql drivers.
import (
	_ "github.com/vkllm/vkllm/kernels/cpu"
	_ "github.com/vkllm/vkllm/kernels/cpuref"
)
