//go:build cgo

package vulkan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// A sweep on a lent GPU must not outlive its lease: sweepCtl is what
// Sweep checks before every family and every candidate (its context and
// deadline), the bound of the run about to start (SweepOptions.Slow), and
// where progress goes. The families' loops ask sweepOpen before each
// candidate's run on a shape and hand its error to sweepSkip after.
type sweepCtl struct {
	ctx      context.Context
	deadline time.Time
	slow     time.Duration // the absolute bound of a first timed run
	factor   time.Duration // and the relative one: × the default's
	progress io.Writer
	verbose  bool

	// The run about to start: its bound and candidate (sweepOpen).
	limit time.Duration
	knobs Knobs
}

// stopped says why no more work may start ("" while it may).
func (c *sweepCtl) stopped() string {
	switch {
	case c.ctx.Err() != nil:
		return "interrupted"
	case !c.deadline.IsZero() && !time.Now().Before(c.deadline):
		return "budget spent"
	}
	return ""
}

// say writes a progress line, stamped with the UTC time, at once
// (flushing a writer that buffers).
func (c *sweepCtl) say(format string, args ...any) {
	fmt.Fprintf(c.progress, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.0")}, args...)...)
	if f, ok := c.progress.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// cutError: the sweep stopped between a candidate's first timed run and
// its repetitions.
type cutError struct{ why string }

func (e *cutError) Error() string { return "cut: " + e.why }

// slowError: a candidate's first timed run passed its bound.
type slowError struct{ took, limit time.Duration }

func (e *slowError) Error() string {
	return fmt.Sprintf("first timed run %.1f µs, above the bound %.1f µs", us(e.took), us(e.limit))
}

// slowFloor: a first timed run this short is never slow relative to the
// default's (a loaded machine's preemption is not a slow kernel).
const slowFloor = 50 * time.Millisecond

// sweepOpen reports whether rows[ci] is to be timed on its si-th timing
// now, and sets the bound of that run: SweepOptions.Slow, or for a
// candidate other than the default (rows[0]) the smaller of that and
// SlowFactor × the default's time there (at least slowFloor). A row already slow or cut is
// not; once the sweep is stopped, or the default has no time there (it
// was slow or cut), the row is marked cut.
func (b *Backend) sweepOpen(rows []SweepRow, ci, si int) bool {
	row, c := &rows[ci], b.sweep
	if c == nil || row.Slow != "" || row.Cut != "" {
		return c == nil
	}
	if why := c.stopped(); why != "" {
		row.Cut = why
		return false
	}
	c.limit, c.knobs = c.slow, row.Knobs
	if ci > 0 {
		if rows[0].Slow != "" {
			row.Slow = "not timed: the default is slow"
			return false
		}
		def := rows[0].Times[si]
		if def <= 0 {
			row.Cut = "the default was not timed"
			return false
		}
		c.limit = min(c.limit, max(c.factor*def, slowFloor))
	}
	return true
}

// sweepSkip records the error of row's run on its si-th timing when it
// is a slow run (the row is marked slow, and its time there kept) or a
// cut one (marked cut), and reports whether it was; other errors are the
// caller's. With
// SweepOptions.Verbose it writes the run's line.
func (b *Backend) sweepSkip(row *SweepRow, si int, d time.Duration, err error) bool {
	c := b.sweep
	if c == nil {
		return false
	}
	var se *slowError
	var ce *cutError
	switch {
	case errors.As(err, &ce):
		row.Cut = ce.why
		return true
	case errors.As(err, &se):
		row.Slow = se.Error()
		row.Times[si] = se.took
		c.say("  %s %v timing %d: slow (%s): not repeated, not timed further", row.Key, row.Knobs, si, row.Slow)
		return true
	case err == nil && c.verbose:
		c.say("  %s %v timing %d: %.1f µs", row.Key, row.Knobs, si, us(d))
	}
	return false
}

// sweepTimed records run reps times in one profile (after one untimed
// run, if warm) and returns one run's mean GPU time.
func (b *Backend) sweepTimed(reps int, warm bool, run func()) (time.Duration, error) {
	if warm {
		b.ProfileOp("warm")
		run()
	}
	b.ProfileOp("timed")
	for range reps {
		run()
	}
	p, err := b.StopProfile()
	if err != nil {
		return 0, err
	}
	for _, op := range p.Ops {
		if op.Label == "timed" {
			return op.Time / time.Duration(reps), nil
		}
	}
	return 0, nil
}
