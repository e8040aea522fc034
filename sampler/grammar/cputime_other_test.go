//go:build !unix

package sampler

func cpuTime() int64 { return 0 }
