package vulkan

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
)

// TestChooseDevice: the device choice over fake device lists.
func TestChooseDevice(t *testing.T) {
	const gb = 1 << 30
	h100 := candidate{Name: "NVIDIA H100", Type: "discrete", Free: 70 * gb}
	busy := candidate{Name: "NVIDIA H100 (busy)", Type: "discrete", Free: 20 * gb}
	igpu := candidate{Name: "Intel UHD", Type: "integrated", Free: 100 * gb}
	lvp := candidate{Name: "llvmpipe", Type: "cpu", Free: 120 * gb}
	for _, c := range []struct {
		name string
		devs []candidate
		want string
		need int64
		got  int // -1: a *FitError
	}{
		{"one device", []candidate{lvp}, "", 0, 0},
		{"the most free of two GPUs", []candidate{busy, h100}, "", 0, 1},
		{"the most free, first listed", []candidate{h100, busy}, "", 0, 0},
		{"a discrete GPU before more free integrated memory", []candidate{lvp, igpu, busy}, "", 10 * gb, 2},
		{"the one that fits", []candidate{busy, h100}, "", 50 * gb, 1},
		{"integrated when no discrete one fits", []candidate{busy, igpu}, "", 50 * gb, 1},
		{"fits none", []candidate{busy, h100}, "", 80 * gb, -1},
		{"an index overrides", []candidate{h100, busy}, "1", 0, 1},
		{"a name overrides the fit", []candidate{h100, busy}, "busy", 50 * gb, 1},
		{"a name, case-insensitive", []candidate{lvp, igpu}, "uhd", 0, 1},
	} {
		got, err := chooseDevice(c.devs, c.want, c.need)
		if c.got < 0 {
			var fe *FitError
			if !errors.As(err, &fe) || errcode.Of(err) != errcode.OOMVRAM {
				t.Errorf("%s: %v, %v; want a FitError (OOM_VRAM)", c.name, got, err)
				continue
			}
			if fe.Software() {
				t.Errorf("%s: FitError.Software with GPUs listed", c.name)
			}
			for _, d := range c.devs {
				if !strings.Contains(err.Error(), d.Name) || !strings.Contains(err.Error(), gib(d.Free)) {
					t.Errorf("%s: %q does not say what %s has free", c.name, err, d.Name)
				}
			}
			continue
		}
		if err != nil || got != c.got {
			t.Errorf("%s: device %d, %v; want %d", c.name, got, err, c.got)
		}
	}
	if _, err := chooseDevice([]candidate{lvp}, "", 1000*gb); err == nil || !err.(*FitError).Software() {
		t.Errorf("llvmpipe alone, too small: %v, want a FitError with Software()", err)
	}
	for _, c := range []struct {
		devs []candidate
		want string
	}{{nil, ""}, {[]candidate{h100}, "2"}, {[]candidate{h100}, "-1"}, {[]candidate{h100}, "AMD"}} {
		if _, err := chooseDevice(c.devs, c.want, 0); !errors.Is(err, ErrNoDevice) {
			t.Errorf("%d devices, %q: %v, want ErrNoDevice", len(c.devs), c.want, err)
		}
	}
}
