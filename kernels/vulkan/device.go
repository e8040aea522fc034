package vulkan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vkllm/vkllm/errcode"
)

// candidate is what the device choice knows of one device.
type candidate struct {
	Name string
	Type string // DeviceInfo.Type: "discrete", "integrated", "virtual", "cpu", "other"
	// Free is the device-local memory a new allocation may take:
	// VK_EXT_memory_budget's budget less its usage where the device has
	// the extension, else the largest device-local heap.
	Free int64
}

// typeRank orders device types for the choice: discrete first, CPU last.
var typeRank = map[string]int{"discrete": 0, "integrated": 1, "virtual": 2, "other": 3, "cpu": 4}

// chooseDevice picks the index of a device of devs. want, when set, names
// it: an index, else a case-insensitive name substring (the first match).
// Otherwise the devices are ordered by type (discrete, integrated,
// virtual, other, CPU), then by free memory, most first, and the first
// with need bytes free is chosen (need 0: the first); when none has, the
// error is a *FitError listing what each has free. A device named by
// want is taken whatever it has free: its allocations say what does not
// fit.
func chooseDevice(devs []candidate, want string, need int64) (int, error) {
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	if len(devs) == 0 {
		return 0, fmt.Errorf("%w: the driver lists no device", ErrNoDevice)
	}
	if want != "" {
		if i, err := strconv.Atoi(want); err == nil {
			if i < 0 || i >= len(devs) {
				return 0, fmt.Errorf("%w: index %d of %d devices %q", ErrNoDevice, i, len(devs), names)
			}
			return i, nil
		}
		for i, name := range names {
			if strings.Contains(strings.ToLower(name), strings.ToLower(want)) {
				return i, nil
			}
		}
		return 0, fmt.Errorf("%w: none named %q among %q", ErrNoDevice, want, names)
	}
	order := make([]int, len(devs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(typeRank[devs[a].Type], typeRank[devs[b].Type]), cmp.Compare(devs[b].Free, devs[a].Free))
	})
	for _, i := range order {
		if devs[i].Free >= need {
			return i, nil
		}
	}
	e := &FitError{Need: need}
	for _, i := range order {
		e.Devices = append(e.Devices, DeviceFree{Index: i, Name: devs[i].Name, Free: devs[i].Free, Software: devs[i].Type == "cpu"})
	}
	return 0, e
}

// FitError: no device has the memory Config.Need asks for free.
type FitError struct {
	Need    int64 // bytes asked for
	Devices []DeviceFree
}

// DeviceFree is one device's free memory in a FitError.
type DeviceFree struct {
	Index    int
	Name     string
	Free     int64 // bytes
	Software bool  // a CPU implementation (lavapipe)
}

// Software reports that every device listed is a CPU implementation of
// Vulkan: kernels.Open("auto") then takes the CPU backend, as it does
// when such a device opens.
func (e *FitError) Software() bool {
	for _, d := range e.Devices {
		if !d.Software {
			return false
		}
	}
	return true
}

func (e *FitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vulkan: no device has %s free for the model:", gib(e.Need))
	for i, d := range e.Devices {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " device %d (%s) has %s", d.Index, d.Name, gib(d.Free))
	}
	return b.String()
}

// Code implements errcode.Coder.
func (e *FitError) Code() errcode.Code { return errcode.OOMVRAM }

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
