//go:build !cpufast

package cpu

// defaultFast is what New and the registered name "cpu" use: the exact
// reference path unless built with the cpufast tag.
const defaultFast = false
