//go:build race

package sampler

// raceEnabled: under the race detector sync.Pool drops a share of what it
// is given on purpose, so a draw's pooled buffers are sometimes allocated
// anew and allocation counts mean nothing.
const raceEnabled = true
