package vulkan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkllm/vkllm/errcode"
)

// ErrNeedsCgo is returned by Open in a binary built without cgo.
var ErrNeedsCgo = errors.New("vulkan: the vulkan backend needs cgo (built with CGO_ENABLED=0)")

// ErrNoDevice: the driver lists no usable device (or none matches the
// requested index or name, or only software devices when a GPU is required).
var ErrNoDevice = errors.New("vulkan: no suitable Vulkan device")

// ErrTooLarge: a tensor the backend needs exceeds the bytes one binding
// may cover (maxStorageBufferRange), as split attention's scratch for one
// token of a very long list can.
var ErrTooLarge = errcode.New(errcode.BadParams, "vulkan: tensor too large for one binding")

// ErrNoTimestamps: StartProfile on a device whose compute queue has no
// timestamps (timestampValidBits 0).
var ErrNoTimestamps = errors.New("vulkan: the device's compute queue has no timestamps to profile with")

// NoDriverError: the Vulkan loader library could not be opened, or it
// found no driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER).
type NoDriverError struct {
	Library string
	Err     error // the failed vkCreateInstance, if the loader was there
}

func (e *NoDriverError) Error() string {
	what := "cannot load " + e.Library
	if e.Err != nil {
		what = e.Library + " finds no driver: " + e.Err.Error()
	}
	return fmt.Sprintf("vulkan: no Vulkan driver: %s (install a Vulkan driver; for tests, tools/install-deps.sh installs mesa-vulkan-drivers)", what)
}

func (e *NoDriverError) Unwrap() error { return e.Err }

// Code implements errcode.Coder.
func (e *NoDriverError) Code() errcode.Code { return errcode.LoadFailed }

// Error is a failed Vulkan call and its VkResult.
type Error struct {
	Op     string
	Result int32
}

// VkResult values we name.
const (
	resOutOfHostMemory     = -1
	resOutOfDeviceMemory   = -2
	resInitializationFail  = -3
	resDeviceLost          = -4
	resIncompatibleDriver  = -9
	resOutOfPoolMemory     = -1000069000
	resTooManyObjects      = -10
	resFragmentedPool      = -12
	resLayerNotPresent     = -6
	resExtensionNotPresent = -7
	resTimeout             = 2 // VK_TIMEOUT: a fence wait gave up (Config.FenceTimeout)
)

func (e *Error) Error() string {
	name := map[int32]string{
		resOutOfHostMemory: "VK_ERROR_OUT_OF_HOST_MEMORY", resOutOfDeviceMemory: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
		resInitializationFail: "VK_ERROR_INITIALIZATION_FAILED", resDeviceLost: "VK_ERROR_DEVICE_LOST",
		resIncompatibleDriver: "VK_ERROR_INCOMPATIBLE_DRIVER", resOutOfPoolMemory: "VK_ERROR_OUT_OF_POOL_MEMORY",
		resTooManyObjects: "VK_ERROR_TOO_MANY_OBJECTS", resLayerNotPresent: "VK_ERROR_LAYER_NOT_PRESENT",
		resExtensionNotPresent: "VK_ERROR_EXTENSION_NOT_PRESENT",
		resTimeout:             "VK_TIMEOUT: the device did not finish a submit within the fence timeout (Config.FenceTimeout); it is taken for hung",
	}[e.Result]
	if name == "" {
		name = fmt.Sprintf("VkResult %d", e.Result)
	}
	return fmt.Sprintf("vulkan: %s: %s", e.Op, name)
}

// Code implements errcode.Coder: out-of-memory results are OOM_VRAM.
func (e *Error) Code() errcode.Code {
	switch e.Result {
	case resOutOfDeviceMemory, resOutOfHostMemory:
		return errcode.OOMVRAM
	case resIncompatibleDriver:
		return errcode.ABIMismatch
	}
	return errcode.LoadFailed
}

// DeviceLost reports whether the device was lost, or did not finish a
// submit within the fence timeout (the backend is then unusable).
func (e *Error) DeviceLost() bool { return e.Result == resDeviceLost || e.Result == resTimeout }

// OOMError: an allocation did not fit the device's memory or the
// configured budget. Everything the failed call had allocated is freed.
type OOMError struct {
	Need   int64 // bytes asked for
	Used   int64 // device memory held by the backend
	Budget int64 // the budget (0: none but the device's own)
	Err    error // the failed vkAllocateMemory, if it was one
}

func (e *OOMError) Error() string {
	s := fmt.Sprintf("vulkan: out of device memory: need %d bytes, %d in use, budget %d", e.Need, e.Used, e.Budget)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OOMError) Unwrap() error { return e.Err }

// Code implements errcode.Coder.
func (e *OOMError) Code() errcode.Code { return errcode.OOMVRAM }

// ValidationError: the validation layer reported messages (other than
// notes on its own coverage, Backend.ValidationNotes).
type ValidationError struct {
	Count    int                 // messages in all
	Messages []ValidationMessage // the distinct ones kept, first seen first
}

// ValidationMessage is one distinct validation message and how often it
// came.
type ValidationMessage struct {
	Text  string
	Count int
}

func (e *ValidationError) Error() string {
	var s strings.Builder
	fmt.Fprintf(&s, "vulkan: %d validation messages, %d distinct kept", e.Count, len(e.Messages))
	kept := 0
	for i, m := range e.Messages {
		fmt.Fprintf(&s, "\n  %d. ", i+1)
		if m.Count > 1 {
			fmt.Fprintf(&s, "(%d times) ", m.Count)
		}
		s.WriteString(m.Text)
		kept += m.Count
	}
	if kept < e.Count {
		fmt.Fprintf(&s, "\n  and %d more not kept (the first %d distinct are)", e.Count-kept, len(e.Messages))
	}
	return s.String()
}
