package kernels

import (
	"errors"
	"time"
)

// Errors of an OpProfiler used out of order.
var (
	// ErrNotProfiling: StopProfile without a StartProfile before it.
	ErrNotProfiling = errors.New("kernels: no profile started")
	// ErrProfiling: StartProfile while a profile is already started.
	ErrProfiling = errors.New("kernels: a profile is already started")
)

// OpProfiler is a Backend that can measure the device time of the work it
// runs, by labels the caller gives (the Vulkan backend: GPU timestamps
// written into its command buffers, without extra submits or waits).
//
// Between StartProfile and StopProfile, ProfileOp(label) says that the
// ops issued from then on, up to the next ProfileOp, belong to label. The
// device time from the start of a label's first command to the start of
// the next label's first command (or the end of the submission) is that
// label's: barrier waits before an op count as its own cost, and no time
// is lost, so the labels' times add up to the profile's Span. Ops issued
// after StartProfile and before any ProfileOp belong to the label "".
// ProfileOp outside a profile does nothing and costs nothing.
type OpProfiler interface {
	// StartProfile starts a profile; it fails with an error wrapping
	// ErrProfiling when one is started already, or when the device cannot
	// time its work. Work issued before it is not profiled.
	StartProfile() error
	// ProfileOp labels the ops issued from now on (see OpProfiler).
	ProfileOp(label string)
	// StopProfile waits for the issued work, as Sync does, ends the
	// profile and returns it; it fails with an error wrapping
	// ErrNotProfiling without a started profile, or with the device's
	// failure (Sync's error).
	StopProfile() (*Profile, error)
}

// Profile is what an OpProfiler measured.
type Profile struct {
	// Ops holds the labels that had work, in the order they first had it.
	Ops []OpTime
	// Span is the device time of the profiled work: over each submission,
	// from its first profiled command's start to its end. It equals the
	// sum of the Ops' Time, to within a nanosecond a label (rounding).
	Span time.Duration
	// Submits counts the submissions the profiled work took.
	Submits int
}

// OpTime is one label's share of a Profile.
type OpTime struct {
	Label string
	// Calls counts the ProfileOp calls of Label that were followed by work
	// (a call's work split over two submissions counts once).
	Calls int
	Time  time.Duration
}
