package kernels

// Replayer is a Backend that can record a step's ops once and run the
// recording again for a later step whose ops are the same: the same
// calls, in the same order, with the same tensors, shapes and scalar
// arguments, only the tensors' contents differing (a decode step's
// token ids, positions, cells and visible lists, written before the
// ops). The caller decides what "the same" is; a step that differs
// runs its ops as usual.
//
// A step writes its inputs (SetI32, SetF32), then either calls
// Replay(id) with the id of an earlier recording, which runs it and
// reports true (false: the recording is gone, run the ops), or runs
// its ops between BeginCapture and EndCapture, which returns the id of
// the recording (0: none was kept, for instance because something other
// than an op came between). Ops run in order whichever way the step
// goes; the results are read as usual (GetF32 after the step). Replays
// reports whether recordings are kept at all (a backend may turn them
// off, for instance while profiling): a caller that prepares its inputs
// differently for replay (a fixed layout) asks it first.
type Replayer interface {
	Replays() bool
	BeginCapture()
	EndCapture() int
	Replay(id int) bool
}
