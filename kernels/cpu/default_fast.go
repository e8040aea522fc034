//go:build cpufast

package cpu

// defaultFast: built with the cpufast tag, New and "cpu" use the fast path.
const defaultFast = true
