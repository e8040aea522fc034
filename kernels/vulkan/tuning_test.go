package vulkan

import (
	"errors"
	"strings"
	"testing"
)

// TestTuningFiles: every committed device file loads (deviceTunings
// panics at init otherwise) and names a device.
func TestTuningFiles(t *testing.T) {
	for _, d := range deviceTunings {
		if d.Device == "" || len(d.Kernels) == 0 {
			t.Errorf("tuning file %+v names no device or no kernel", d)
		}
	}
}

func TestTuningCheck(t *testing.T) {
	for _, c := range []struct {
		t    Tuning
		want string // "" for no error
	}{
		{Tuning{"matvec/q4_0": {"wg": 256, "rows": 4}}, ""},
		{Tuning{"matvec_batch/f16": {"toks": 16, "rows": 2}}, ""},
		{Tuning{"matvex/q4_0": {"wg": 64}}, `no kernel family "matvex"`},
		{Tuning{"matvec/q4_0": {"warps": 2}}, `no knob "warps"`},
		{Tuning{"matvec/q4_0": {"wg": 96}}, "wg=96 is not one of"},
		{Tuning{"matvec_batch/q4_0": {"rows": 4, "toks": 16}}, "not a valid combination"},
		{Tuning{"attention": {"segs": 64, "tile": 8192}, "attention_prefill": {"min": 8}}, ""},
		{Tuning{"attention": {"segs": 3}}, "segs=3 is not one of"},
		{Tuning{"attention_prefill": {"segs": 8}}, `no knob "segs"`},
		{Tuning{"attention/f16": {"segs": 8}}, "takes no sub-key"},
	} {
		err := c.t.Check()
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, ErrTuning) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.t, err, c.want)
		}
	}
	if _, err := ParseDeviceTuning([]byte(`{"vendor": 4318, "kernels": {}}`)); !errors.Is(err, ErrTuning) {
		t.Error("a file without a device name loads")
	}
}

// TestTuningFor: a device's file applies to that device only, and
// Config.Tuning overrides it knob by knob.
func TestTuningFor(t *testing.T) {
	saved := deviceTunings
	defer func() { deviceTunings = saved }()
	deviceTunings = []DeviceTuning{{Vendor: 0x10de, Device: "Card", Kernels: Tuning{"matvec/q4_0": {"wg": 256, "rows": 4}}}}
	got := tuningFor(0x10de, "Card", Tuning{"matvec/q4_0": {"rows": 1}}).knobs("matvec/q4_0")
	if want := (Knobs{"wg": 256, "rows": 1, "toks": 1, "bpi": 2}); got.String() != want.String() {
		t.Errorf("knobs %v, want %v", got, want)
	}
	if got := tuningFor(0x1002, "Card", nil).knobs("matvec/q4_0"); got.String() != Families["matvec"].Default.String() {
		t.Errorf("another vendor's device got %v", got)
	}
	if n := len(Families["matvec"].Candidates()); n != 27 {
		t.Errorf("%d matvec candidates, want 27", n)
	}
}
