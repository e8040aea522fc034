//go:build !amd64 || purego

package benchcmd

func readAll(b []byte) uint64 { return readAllGo(b) }

func readAll4(b []byte) uint64 { return readAllGo(b) }
