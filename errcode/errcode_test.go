package errcode

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type corrupt struct{}

func (corrupt) Error() string { return "corrupt" }
func (corrupt) Code() Code    { return ModelCorrupt }

func TestOf(t *testing.T) {
	closed := New(Closed, "x: closed")
	base := errors.New("kv: no free slot")
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, None},
		{"plain", errors.New("plain"), LoadFailed},
		{"coder", corrupt{}, ModelCorrupt},
		{"wrapped coder", fmt.Errorf("open x: %w", corrupt{}), ModelCorrupt},
		{"sentinel", closed, Closed},
		{"wrapped sentinel", fmt.Errorf("x: %w: more", closed), Closed},
		{"Wrap", Wrap(CacheFull, base), CacheFull},
		{"wrapped Wrap", fmt.Errorf("decode: %w", Wrap(CacheFull, base)), CacheFull},
		{"canceled", context.Canceled, Cancelled},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), Cancelled},
		{"code beats context", Wrap(BadParams, context.Canceled), BadParams},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of(%v) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}

func TestSentinelAndWrap(t *testing.T) {
	s := New(QueueFull, "x: queue full")
	if s.Error() != "x: queue full" || !errors.Is(fmt.Errorf("%w: 3 pending", s), s) {
		t.Errorf("New: text %q, or errors.Is fails through %%w", s.Error())
	}
	if New(QueueFull, "x: queue full") == s {
		t.Error("two New calls give the same error")
	}
	base := errors.New("base")
	w := Wrap(BadParams, base)
	if w.Error() != "base" || !errors.Is(w, base) {
		t.Errorf("Wrap: text %q, errors.Is(w, base) = %v", w.Error(), errors.Is(w, base))
	}
	var c corrupt
	if !errors.As(Wrap(BadParams, corrupt{}), &c) {
		t.Error("errors.As does not see through Wrap")
	}
	if Wrap(BadParams, nil) != nil {
		t.Error("Wrap(c, nil) != nil")
	}
}
