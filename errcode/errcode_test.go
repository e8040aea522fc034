package errcode

import (
	"errors"
	"fmt"
	"testing"
)

type corrupt struct{}

func (corrupt) Error() string { return "corrupt" }
func (corrupt) Code() Code    { return ModelCorrupt }

func TestOf(t *testing.T) {
	cases := []struct {
		err  error
		want Code
	}{
		{nil, None},
		{errors.New("plain"), LoadFailed},
		{corrupt{}, ModelCorrupt},
		{fmt.Errorf("open x: %w", corrupt{}), ModelCorrupt},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
