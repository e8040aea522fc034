//go:build required

// Package vkvideo holds vendored C headers only (see kernels/vulkan/keep.go):
// this file, under a build tag no build sets, makes `go mod vendor` keep
// the folder.
package vkvideo
