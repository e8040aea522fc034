package vulkan

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Knobs are one kernel's tuning constants by name (its specialization
// constants: "wg", "rows", …). A knob changes speed only, never a result,
// except attention's "segs" (see AttentionTuning.Segments).
type Knobs map[string]int

// Family is a kernel family's tuning: its knobs' defaults, the values the
// sweep tries, and the order of the specialization constants they become.
// A kernel adds its knobs with one entry in Families.
type Family struct {
	// Spec names the knobs in specialization-constant order (constant_id
	// 0, 1, …).
	Spec []string
	// Default is used where no device file or Config sets a knob.
	Default Knobs
	// Space is the values the sweep tries per knob (every combination
	// that Valid accepts is a candidate).
	Space map[string][]int
	// Valid reports whether a combination is allowed (nil: all are).
	Valid func(Knobs) bool
	// Whole: the family's key is its name alone (no "/" sub-key).
	Whole bool
}

// Families lists the tuned kernel families. A tuning key is a family and a
// weight type (or other sub-key) joined by "/", e.g. "matvec/q4_0"; a key
// without an entry of its own takes the family's defaults.
//
//   - matvec: matmul.comp for one token (decode). wg: invocations a
//     workgroup (slots of 64 lanes); rows: weight rows a slot; toks: tokens
//     a workgroup; bpi: quant groups (or elements) a lane issues per step.
//   - matvec_batch: the same kernel for 2 to mmMinTokens-1 tokens.
//   - matvec_int8, matvec_int8_batch: the int8 mode's matrix-vector
//     kernel (matmul.comp's INT8 variants, int8.go) for one token and for
//     more (prefill included), the same knobs; keyed by the Int8Types
//     weight types.
//   - attention: decode attention (attention.comp), key "attention"; its
//     knobs are AttentionTuning's Segments ("segs"), HeadsPerGroup
//     ("heads"), Workgroups ("wgs") and TileFloats ("tile", shared with
//     prefill). "segs" changes results (the same in decode and prefill).
//   - attention_prefill: attention_prefill.comp, key "attention_prefill":
//     QueryRows ("rows"), PrefillWG ("wg") and PrefillMin ("min").
//   - coopmat: the cooperative-matrix MatMul's tile (matmul_coop.comp,
//     coop.go) for calls of at least coopmat_small's "min" tokens: tm
//     tokens × tn weight rows a workgroup, wm × wn a subgroup, bk of k a
//     step through shared memory, at least sg subgroups a workgroup.
//   - coopmat_small: its tile for fewer tokens (a decode step, short
//     batches), and "min", the crossover. No coop knob changes a bit.
//   - layout: how Upload lays out a weight of the sub-key's dtype, key
//     "layout/q4_0": "repack" 1 repacks it (layout.go; every kernel
//     reads it, with the same results), 0 keeps the file's bytes. The
//     default is 0 until a device's sweep measures both layouts.
//
// The attention and layout knobs are not spec-constant lists of one
// kernel (Spec only names them); Config.Attention's non-zero fields win
// over the attention knobs, Config.NoRepack over "repack".
var Families = map[string]Family{
	"matvec":       matvecFamily(1, []int{1}),
	"matvec_batch": matvecFamily(8, []int{2, 4, 8, 16}),
	// The int8 mode's kernel (int8.go), the same knobs.
	"matvec_int8":       matvecFamily(1, []int{1}),
	"matvec_int8_batch": matvecFamily(8, []int{2, 4, 8, 16}),
	"attention": {
		Spec:    []string{"segs", "heads", "wgs", "tile"},
		Default: Knobs{"segs": 32, "heads": 8, "wgs": 128, "tile": 4096},
		Space: map[string][]int{
			"segs": {8, 16, 32, 64, 128}, "heads": {1, 2, 4, 8}, "wgs": {1, 64, 128, 256, 512}, "tile": {2048, 4096, 8192},
		},
		Whole: true,
	},
	"layout": {
		Spec:    []string{"repack"},
		Default: Knobs{"repack": 0},
		Space:   map[string][]int{"repack": {0, 1}},
	},
	"attention_prefill": {
		Spec:    []string{"rows", "wg", "min"},
		Default: Knobs{"rows": 16, "wg": 128, "min": 32},
		Space:   map[string][]int{"rows": {8, 16, 32}, "wg": {64, 128, 256}, "min": {8, 16, 32, 64}},
		Whole:   true,
	},
	// The coop tiles (coopTile) for an H100 or H200: 132 SMs, 48 KiB of
	// shared memory a workgroup (228 KiB an SM), the 16×16×16 shape,
	// subgroups of 32. A dst element is one chain over k/bk steps, each a
	// round trip to memory (about 1 µs with the barriers) that no tile
	// can split, so:
	//   - coopmat_small (decode, n < min): many chains at once and long
	//     steps. tn 16: a workgroup per 16 rows (256 on a 4096-row
	//     weight, 2 an SM; 56 on 896 rows); bk 256: k/256 steps (16 for
	//     k 4096, 56 for 14336), 4 KiB of Q4_0 (8 KiB of F16) a
	//     workgroup a step, all in flight at once (17.5 KiB of shared
	//     memory; 512, 33 KiB, halves the steps but cannot be the
	//     default: lavapipe, where the tests run, has 32 KiB). sg 4: one subgroup multiplies the 16×16 block,
	//     four load and round the 4096 weights of a step, two pieces of
	//     16 each (a piece's loads are independent: about ten in flight
	//     an invocation). min 32: up to 31 tokens the weights are read
	//     twice at most, below the ridge of the matrix cores either way.
	//   - coopmat (prefill): 64×64 tiles, 32×32 a subgroup (2 × 2
	//     accumulators of four subgroups): 512 workgroups for 512 tokens
	//     of a 4096-row weight, 4 an SM; bk 32 (25 KiB with the 16 KiB
	//     float tile for the edges; 64 would not fit lavapipe). Loading
	//     and rounding 4096 halves a step, not its 32 products, bound
	//     it, so sg 8: eight subgroups load it.
	"coopmat": {
		Spec:    coopSpec[:6],
		Default: Knobs{"tm": 64, "tn": 64, "wm": 32, "wn": 32, "bk": 32, "sg": 8},
		Space:   map[string][]int{"tm": {32, 64, 128}, "tn": {32, 64, 128}, "wm": {32}, "wn": {32}, "bk": {32, 64, 128}, "sg": {1, 8}},
		Valid:   func(k Knobs) bool { return tileOf(k).static() },
	},
	"coopmat_small": {
		Spec:    coopSpec,
		Default: Knobs{"tm": 16, "tn": 16, "wm": 16, "wn": 16, "bk": 256, "sg": 4, "min": 32},
		Space:   map[string][]int{"tm": {16}, "tn": {16, 32}, "wm": {16}, "wn": {16}, "bk": {64, 128, 256, 512}, "sg": {1, 4, 8}, "min": {16, 32, 64}},
		Valid:   func(k Knobs) bool { return tileOf(k).static() },
	},
}

// coopSpec names the coop families' knobs: matmul_coop.comp's
// specialization constants 1-5 (0 is the workgroup size, 6-8 the shape),
// the subgroups a workgroup (coopTile.sg, in constant 0), then
// coopmat_small's crossover.
var coopSpec = []string{"tm", "tn", "wm", "wn", "bk", "sg", "min"}

// maxSums bounds the float32 sums a lane of matmul.comp keeps: rows·toks,
// twice that for the fused gate/up kernel (GateUpSwiGLU declines a tuning
// past it: the composition runs instead).
const maxSums = 32

func matvecFamily(toks int, tokSpace []int) Family {
	return Family{
		Spec:    []string{"wg", "rows", "toks", "bpi"},
		Default: Knobs{"wg": 128, "rows": 2, "toks": toks, "bpi": 2},
		Space: map[string][]int{
			"wg": {64, 128, 256}, "rows": {1, 2, 4}, "toks": tokSpace, "bpi": {1, 2, 4},
		},
		// At most maxSums sums a lane: registers, and the subgroup
		// reduction's shared memory ((wg/64)·rows·toks·16 floats).
		Valid: func(k Knobs) bool { return k["rows"]*k["toks"] <= maxSums },
	}
}

// ErrTuning is wrapped by the errors of a tuning that names no family or
// knob, a value outside a knob's space or a file that does not parse.
var ErrTuning = errors.New("vulkan: bad tuning")

// Tuning maps tuning keys ("matvec/q4_0") to knobs; a key's knobs override
// the family's defaults one by one.
type Tuning map[string]Knobs

// DeviceTuning is a committed sweep result: the knobs chosen for one
// device, found by its vendor ID and name. The files live in
// kernels/vulkan/tuning/*.json (written by `vkllm bench --sweep`) and are
// embedded.
type DeviceTuning struct {
	Vendor  uint32 `json:"vendor"` // PCI vendor ID (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel)
	Device  string `json:"device"` // the device name as Vulkan reports it
	Date    string `json:"date,omitempty"`
	Kernels Tuning `json:"kernels"`
}

//go:embed tuning
var tuningFiles embed.FS

// deviceTunings are the embedded device files, read once.
var deviceTunings = func() []DeviceTuning {
	var out []DeviceTuning
	names, _ := tuningFiles.ReadDir("tuning")
	for _, e := range names {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := tuningFiles.ReadFile("tuning/" + e.Name())
		if err != nil {
			panic("vulkan: " + err.Error())
		}
		d, err := ParseDeviceTuning(b)
		if err != nil {
			panic(fmt.Sprintf("vulkan: tuning/%s: %v", e.Name(), err)) // a committed file: TestTuningFiles
		}
		out = append(out, d)
	}
	return out
}()

// ParseDeviceTuning reads a device file, checking every key's family and
// knobs.
func ParseDeviceTuning(b []byte) (DeviceTuning, error) {
	var d DeviceTuning
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%w: %w", ErrTuning, err)
	}
	if d.Device == "" {
		return d, fmt.Errorf("%w: no device name", ErrTuning)
	}
	return d, d.Kernels.Check()
}

// Check reports a key of no family, a knob the family lacks, or a
// combination it does not allow.
func (t Tuning) Check() error {
	for _, key := range slices.Sorted(maps.Keys(t)) {
		fam, _, _ := strings.Cut(key, "/")
		f, ok := Families[fam]
		if !ok {
			return fmt.Errorf("%w %q: no kernel family %q", ErrTuning, key, fam)
		}
		if f.Whole && key != fam {
			return fmt.Errorf("%w %q: %s takes no sub-key (use %q)", ErrTuning, key, fam, fam)
		}
		for k, v := range t[key] {
			if !slices.Contains(f.Spec, k) {
				return fmt.Errorf("%w %q: %s has no knob %q (it has %v)", ErrTuning, key, fam, k, f.Spec)
			}
			if space := f.Space[k]; len(space) > 0 && !slices.Contains(space, v) {
				return fmt.Errorf("%w %q: %s=%d is not one of %v", ErrTuning, key, k, v, space)
			}
		}
		if f.Valid != nil && !f.Valid(f.knobs(t[key])) {
			return fmt.Errorf("%w %q: %v is not a valid combination", ErrTuning, key, t[key])
		}
	}
	return nil
}

// knobs is f's defaults overridden by over.
func (f Family) knobs(over Knobs) Knobs {
	k := maps.Clone(f.Default)
	maps.Copy(k, over)
	return k
}

// spec is k as specialization constants, in f.Spec's order.
func (f Family) spec(k Knobs) []uint32 {
	s := make([]uint32, len(f.Spec))
	for i, name := range f.Spec {
		s[i] = uint32(k[name])
	}
	return s
}

// Candidates lists every combination of f's Space that Valid allows, in a
// fixed order.
func (f Family) Candidates() []Knobs {
	out := []Knobs{{}}
	for _, name := range f.Spec {
		vals := f.Space[name]
		if len(vals) == 0 {
			vals = []int{f.Default[name]}
		}
		var next []Knobs
		for _, k := range out {
			for _, v := range vals {
				c := maps.Clone(k)
				c[name] = v
				next = append(next, c)
			}
		}
		out = next
	}
	return slices.DeleteFunc(out, func(k Knobs) bool { return f.Valid != nil && !f.Valid(k) })
}

// String writes k as name=value pairs in spec order, e.g. "wg=128 rows=2".
func (k Knobs) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(k)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", name, k[name])
	}
	return b.String()
}

// tuningFor is the tuning of a device: the embedded file of its vendor and
// name (if any), overridden key by key and knob by knob by over.
func tuningFor(vendor uint32, device string, over Tuning) Tuning {
	t := Tuning{}
	for _, d := range deviceTunings {
		if d.Vendor == vendor && d.Device == device {
			for key, k := range d.Kernels {
				t[key] = maps.Clone(k)
			}
		}
	}
	for key, k := range over {
		if t[key] == nil {
			t[key] = Knobs{}
		}
		maps.Copy(t[key], k)
	}
	return t
}

// knobs returns the knobs of key (family "/" sub-key) under t.
func (t Tuning) knobs(key string) Knobs {
	fam, _, _ := strings.Cut(key, "/")
	f, ok := Families[fam]
	if !ok {
		panic("vulkan: no kernel family " + fam) // our own keys
	}
	return f.knobs(t[key])
}
