package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// isTerminal is whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// bar draws the progress of a byte count on a terminal: one line,
// redrawn at most every 100 ms,
//
//	loading SmolLM2-135M-Instruct.Q4_1.gguf [=========>          ]  47%  44/94 MiB
//
// Elsewhere (a file, a pipe) it writes a plain line at each quarter when
// plain is set, else nothing. It is safe for use from several goroutines.
type bar struct {
	w        io.Writer
	label    string
	tty      bool
	plain    bool
	mu       sync.Mutex
	last     time.Time
	quarter  int64 // plain lines written so far (0-4)
	drawn    bool
	finished bool
}

func newBar(w io.Writer, label string, plain bool) *bar {
	return &bar{w: w, label: label, tty: isTerminal(w), plain: plain}
}

// Update shows done bytes out of total (total ≤ 0: unknown).
func (b *bar) Update(done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	if !b.tty {
		if !b.plain || total <= 0 {
			return
		}
		for q := done * 4 / total; b.quarter < min(q, 4); {
			b.quarter++
			fmt.Fprintf(b.w, "%s: %d%% (%s of %s)\n", b.label, 25*b.quarter, mib(total*b.quarter/4), mib(total))
		}
		return
	}
	if now := time.Now(); done < total && now.Sub(b.last) < 100*time.Millisecond {
		return
	} else {
		b.last = now
	}
	b.drawn = true
	if total <= 0 {
		fmt.Fprintf(b.w, "\r\033[K%s %s", b.label, mib(done))
		return
	}
	const width = 30
	frac := min(float64(done)/float64(total), 1)
	n := int(frac * width)
	fill := strings.Repeat("=", n)
	if n < width {
		fill += ">" + strings.Repeat(" ", width-n-1)
	}
	fmt.Fprintf(b.w, "\r\033[K%s [%s] %3.0f%% %s/%s", b.label, fill, 100*frac, mibNum(done), mib(total))
}

// Done ends the bar: on a terminal it clears the line (clear) or ends it
// with a newline.
func (b *bar) Done(clear bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if !b.tty || !b.drawn {
		return
	}
	if clear {
		fmt.Fprint(b.w, "\r\033[K")
	} else {
		fmt.Fprintln(b.w)
	}
}

func mibNum(n int64) string { return fmt.Sprintf("%.0f", float64(n)/(1<<20)) }
func mib(n int64) string    { return mibNum(n) + " MiB" }
