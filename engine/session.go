package engine

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"sync"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Errors of a Session.
var (
	ErrSessionClosed = errcode.New(errcode.Closed, "engine: session closed")
	ErrSessionKind   = errcode.New(errcode.BadParams, "engine: a session takes either text (Send) or messages (SendChat), not both")
)

// Session is a conversation whose K/V stays in the cache between turns:
// each turn computes only what the cache lacks (the new input, and the
// previous reply's last token, which was drawn but never run). Its cells
// may be reclaimed while it is idle, when running requests need them; the
// next turn then recomputes the conversation, transparently. A Session
// runs one turn at a time; Close frees its cells.
//
// A session is a chat or a text, by its first turn. For a conversation
// with a chat model, use SendChat: it renders the messages so far with
// the model's chat template. Send is the raw text continuation of base
// models (Stream with memory): its text goes to the model as written,
// with no roles and no template, so a chat model does not see a chat.
type Session struct {
	l    *LLM
	name string

	mu       sync.Mutex
	busy     bool
	cur      string // the running turn's request id
	closed   bool
	kind     int8           // 0 before the first turn, then textSession or chatSession
	tokens   []int32        // the conversation so far, as the model ran it
	messages []chat.Message // chat sessions: the conversation so far
}

// The kinds of a Session.
const (
	textSession int8 = 1 + iota
	chatSession
)

// NewSession starts an empty conversation.
func (l *LLM) NewSession() *Session {
	l.mu.Lock()
	l.nextID++
	name := "session-" + strconv.FormatUint(l.nextID, 10)
	l.mu.Unlock()
	return &Session{l: l, name: name}
}

// Tokens is the conversation so far as the model ran it: of a chat
// session, the last turn's rendered prompt and the reply's tokens.
func (s *Session) Tokens() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Messages is the conversation so far of a chat session.
func (s *Session) Messages() []chat.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// begin marks a turn as running; only one runs at a time.
func (s *Session) begin(chatTurn bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrSessionClosed
	case s.busy:
		return ErrSessionBusy
	case chatTurn && s.kind == textSession || !chatTurn && s.kind == chatSession:
		return ErrSessionKind
	}
	s.busy = true
	return nil
}

// SendChat appends messages to the conversation, renders all of it with
// the chat template (req.Tools and req.Kwargs apply to this turn) and
// streams the assistant's reply, which joins the conversation as an
// assistant message when it ends normally. Tools and ToolChoice work as in
// StreamChat; the reply's tool calls join the message as its ToolCalls.
func (s *Session) SendChat(ctx context.Context, req ChatRequest, params sampler.Params) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		if err := s.begin(true); err != nil {
			yield(Delta{}, err)
			return
		}
		defer s.end()
		s.mu.Lock()
		msgs := append(slices.Clone(s.messages), req.Messages...)
		s.mu.Unlock()
		req.Messages = msgs
		t, err := s.l.plan(req, params, nil)
		if err != nil {
			yield(Delta{}, err)
			return
		}
		prompt, err := s.l.encode(t.text, false, t.literal)
		if err != nil {
			yield(Delta{}, err)
			return
		}
		var reply Result
		var out []int32
		ok := s.turn(ctx, prompt, t.params, t, yield, func(d Delta) { reply.add(d); out = append(out, d.NewTokens...) })
		if ok {
			s.mu.Lock()
			s.kind, s.tokens = chatSession, append(prompt, out...)
			s.messages = append(msgs, chat.Message{Role: "assistant", Content: reply.Text, ToolCalls: reply.ToolCalls})
			s.mu.Unlock()
		}
	}
}

// Send appends text to the conversation and streams the reply, as
// Stream: raw text, no chat template (a chat takes SendChat). The first turn's text gets the tokenizer's special tokens (BOS);
// later turns' text is appended as it is. When the reply ends normally
// (stop or length) the input and the reply's tokens join the
// conversation; after an error, a cancel or an early break the
// conversation is as it was before the turn.
func (s *Session) Send(ctx context.Context, text string, params sampler.Params) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		if err := s.begin(false); err != nil {
			yield(Delta{}, err)
			return
		}
		defer s.end()
		s.mu.Lock()
		first := len(s.tokens) == 0
		prompt := slices.Clone(s.tokens)
		s.mu.Unlock()
		in, err := s.l.encode(text, first, nil)
		if err != nil {
			yield(Delta{}, err)
			return
		}
		prompt = append(prompt, in...)
		var out []int32
		ok := s.turn(ctx, prompt, params, nil, yield, func(d Delta) { out = append(out, d.NewTokens...) })
		if ok {
			s.mu.Lock()
			s.kind, s.tokens = textSession, append(prompt, out...)
			s.mu.Unlock()
		}
	}
}

// turn runs one request of the session and yields its deltas (parsed by
// ct's parser, when it has one); it reports whether the reply ended
// normally (stop, length or tool_calls).
func (s *Session) turn(ctx context.Context, prompt []int32, params sampler.Params, ct *chatPlan,
	yield func(Delta, error) bool, keep func(Delta)) bool {
	submit := func() ([]string, []*mailbox, error) {
		id := s.l.newID()
		s.mu.Lock()
		s.cur = id
		s.mu.Unlock()
		box := newMailbox(1)
		req := &Request{ID: id, Prompt: prompt, Params: params, Session: s.name}
		if err := s.l.send(command{req: req, box: box}); err != nil {
			return nil, nil, err
		}
		return []string{id}, []*mailbox{box}, nil
	}
	ok := false
	for d, err := range s.l.stream(ctx, submit) {
		if err == nil && ct != nil {
			if err = ct.parse(&d); err != nil {
				d = Delta{}
			}
		}
		if err == nil {
			keep(d)
			ok = d.Finished && (d.FinishReason == "stop" || d.FinishReason == "length" || d.FinishReason == "tool_calls")
		}
		if !yield(d, err) || err != nil {
			return ok
		}
	}
	return ok
}

// end closes a turn; when the session was closed during it, its cells
// are freed now.
func (s *Session) end() {
	s.mu.Lock()
	s.busy, s.cur = false, ""
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.free()
	}
}

// Close ends the session: a running turn is aborted, and the session's
// cells are freed (when that turn has ended). Closing twice is fine.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	busy, cur := s.busy, s.cur
	s.mu.Unlock()
	if busy {
		if cur != "" {
			s.l.abort(cur)
		}
		return nil // end() frees the cells
	}
	return s.free()
}

func (s *Session) free() error {
	err := s.l.send(command{endSession: s.name})
	if errors.Is(err, ErrClosed) {
		return nil // the LLM freed everything
	}
	return err
}
