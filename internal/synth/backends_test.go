package synth

// The tests open the models they build on "cpu" (and "cpu-ref"): a
// package that opens models imports the backends it wants, as
// database/sql drivers.
import (
	_ "github.com/vkllm/vkllm/kernels/cpu"
	_ "github.com/vkllm/vkllm/kernels/cpuref"
)
