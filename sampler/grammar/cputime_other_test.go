//go:build !unix

package grammar

func cpuTime() int64 { return 0 }
