package runinfo

// The tests open models on "cpu": a package that opens models imports
// the backends it wants, as database/sql drivers.
import _ "github.com/vkllm/vkllm/kernels/cpu"
