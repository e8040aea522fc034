package engine

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/sampler"
)

// Request is one generation request. Prompt holds token ids; ID must be
// unique among the engine's unfinished requests.
type Request struct {
	ID     string
	Prompt []int32
	Params sampler.Params
	// Session, when set, keeps the request's K/V after it ends, under
	// this name, for the session's next request: the tokens the two share
	// at the start are not computed again. Idle sessions may be evicted
	// under pressure (the next turn then recomputes). At most one request
	// of a session may be unfinished. EndSession frees it.
	Session string
	// N is the number of choices: samples of the one prompt, which is
	// computed once (0 or 1: one choice). Choice i draws with Params and
	// Seed+i when Seed is set (each its own random seed otherwise); its
	// Outputs carry Index i. N may not exceed the Context's MaxSeqs, and
	// such a request is admitted only when N sequences are free. A
	// session request has one choice.
	N int
	// Constraints, when set, holds one Constraint per choice and replaces
	// Params.Constraint: a Constraint has state, so choices cannot share
	// one. A request of N > 1 with Params.Constraint must give them.
	Constraints []sampler.Constraint
	// Adapter, when set, names the LoRA adapter (Config.Adapters) the
	// request runs with; "" runs the base model. Cached prefixes and
	// sessions are reused only by requests of the same adapter.
	Adapter string
	// Embed, when set, makes this an embedding request: its prompt is
	// computed (batched with the generations, in the same steps) and no
	// token is drawn; its one final Output carries the pooled vector in
	// Embedding, FinishReason "stop". Params are not used; N, Session
	// and Constraints must be unset.
	Embed *EmbedParams

	// constraintKey names the constraints for the LLM's inference cache
	// (WithConstraintKey).
	constraintKey string
	// format is the response format of WithResponseFormat, which the
	// LLM turns into Constraints before the request is added.
	format *ResponseFormat
}

// State is where a request is in its life.
type State uint8

const (
	Waiting              State = iota // queued, never run
	Running                           // has (or is getting) cells and a sequence id
	Preempted                         // cells freed; waits to re-prefill prompt+output
	FinishedStopped                   // EOS, a stop token or a stop string
	FinishedLengthCapped              // max_tokens or the context length
	FinishedAborted                   // Abort, or its caller went away
	numStates
)

var stateNames = [numStates]string{"waiting", "running", "preempted",
	"finished_stopped", "finished_length_capped", "finished_aborted"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Finished reports whether s is a final state.
func (s State) Finished() bool { return s >= FinishedStopped && s < numStates }

// FinishReason is the OpenAI finish_reason of a final state ("" otherwise).
func (s State) FinishReason() string {
	switch s {
	case FinishedStopped:
		return "stop"
	case FinishedLengthCapped:
		return "length"
	case FinishedAborted:
		return "abort"
	}
	return ""
}

// transitions[from][to] is true when the move is legal. Final states have
// no way out.
var transitions = [numStates][numStates]bool{
	Waiting:   {Running: true, FinishedAborted: true},
	Running:   {Preempted: true, FinishedStopped: true, FinishedLengthCapped: true, FinishedAborted: true},
	Preempted: {Running: true, FinishedAborted: true},
}

// ErrBadTransition is wrapped by every *TransitionError.
var ErrBadTransition = errors.New("engine: illegal state transition")

// TransitionError is a move the transition table forbids: a bug in the
// engine, reported rather than carried out.
type TransitionError struct {
	ID       string
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("engine: request %q cannot go from %v to %v", e.ID, e.From, e.To)
}

func (e *TransitionError) Unwrap() error { return ErrBadTransition }

// CanTransition reports whether a request may go from one state to another.
func CanTransition(from, to State) bool {
	return from < numStates && to < numStates && transitions[from][to]
}

// transition moves a request to state to, or fails leaving it unchanged.
func transition(id string, s *State, to State) error {
	if !CanTransition(*s, to) {
		return &TransitionError{ID: id, From: *s, To: to}
	}
	*s = to
	return nil
}
