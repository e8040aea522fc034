//go:build cgo

package benchcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// runProbe is --probe: vulkan's Probe on the device (VKLLM_DEVICE picks
// it), a line per measurement on stderr as it runs, then the table on
// stdout, or with asJSON the JSON result on stdout and the table on
// stderr.
func runProbe(small bool, budget time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	cfg, err := vulkan.FromEnv(vulkan.Config{})
	if err != nil {
		return err
	}
	b, err := vulkan.Open(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(stderr, "probe on %s, budget %v\n", b.Describe(), budget)
	res, err := b.Probe(vulkan.ProbeOptions{Small: small, Budget: budget, Progress: stderr})
	if err != nil {
		return err
	}
	if asJSON { // the table too, on stderr with the progress lines
		res.Table(stderr)
		return json.NewEncoder(stdout).Encode(res)
	}
	res.Table(stdout)
	return nil
}
