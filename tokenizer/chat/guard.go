package chat

import (
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Limits that keep a template from crashing the process: Go has no
// recoverable stack overflow, so recursion is bounded before it gets deep.
//
// They do not make Render a sandbox against hostile templates: a template
// can still loop for a long time or build huge strings ('x' * 10**9), as it
// can in Jinja.
const (
	// maxNesting bounds brackets plus open blocks at any point of the
	// source (gonja's parser recurses on both).
	maxNesting = 200
	// maxMacroDepth bounds nested macro calls (recursive macros are used,
	// e.g. to print nested JSON schema types).
	maxMacroDepth = 100
	// MaxTemplateBytes bounds the template source.
	MaxTemplateBytes = 1 << 20
)

// chatControlStructures are gonja's tags less those that load other templates
// or define blocks (a chat template is one file; a block can call itself
// through self), with macro calls depth-bounded and transformers'
// {% generation %} tag.
func chatControlStructures() *exec.ControlStructureSet {
	m := map[string]parser.ControlStructureParser{}
	for _, name := range []string{"autoescape", "filter", "for", "if", "raw", "set", "with", "do",
		"break", "continue", "trans", "call"} {
		p, ok := builtins.ControlStructures.Get(name)
		if !ok {
			panic("chat: gonja has no " + name + " tag")
		}
		m[name] = p
	}
	m["macro"] = boundedMacroParser
	m["generation"] = generationParser
	return exec.NewControlStructureSet(m)
}

// boundedMacro defines a macro whose calls count toward maxMacroDepth.
type boundedMacro struct {
	*controlStructures.MacroControlStructure
}

func boundedMacroParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	inner, _ := builtins.ControlStructures.Get("macro")
	cs, err := inner(p, args)
	if err != nil {
		return nil, err
	}
	m, ok := cs.(*controlStructures.MacroControlStructure)
	if !ok {
		return nil, fmt.Errorf("unexpected macro node %T", cs)
	}
	return &boundedMacro{m}, nil
}

func (b *boundedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	fn, err := exec.MacroNodeToFunc(b.Macro, r)
	if err != nil {
		return fmt.Errorf("macro %s: %w", b.Macro.Name, err)
	}
	state := stateOf(r.Environment.Context)
	name := b.Macro.Name
	r.Environment.Context.Set(name, exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if state != nil {
			state.macroDepth++
			defer func() { state.macroDepth-- }()
			if state.macroDepth > maxMacroDepth {
				return exec.AsValue(fmt.Errorf("macro %s: calls nested deeper than %d", name, maxMacroDepth))
			}
		}
		return fn(params)
	}))
	return nil
}

// generation is transformers' {% generation %}...{% endgeneration %}: it
// marks assistant text for masks and renders its body unchanged.
type generation struct {
	location *tokens.Token
	wrapper  *nodes.Wrapper
}

func (g *generation) Position() *tokens.Token { return g.location }
func (g *generation) String() string          { return "generation" }

func (g *generation) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	return r.ExecuteWrapper(g.wrapper)
}

func generationParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	g := &generation{location: p.Current()}
	wrapper, endargs, err := p.WrapUntil("endgeneration")
	if err != nil {
		return nil, err
	}
	if !args.End() || !endargs.End() {
		return nil, args.Error("generation takes no arguments", nil)
	}
	g.wrapper = wrapper
	return g, nil
}

// stateKey names the rendering's *renderState in the template context.
const stateKey = "__vkllm_chat_state"

func stateOf(ctx *exec.Context) *renderState {
	v, _ := ctx.Get(stateKey)
	s, _ := v.(*renderState)
	return s
}

// blockTags open a block closed by end<tag>.
var blockTags = map[string]bool{"for": true, "if": true, "macro": true, "call": true, "filter": true,
	"with": true, "raw": true, "autoescape": true, "trans": true, "generation": true}

// checkNesting rejects sources whose brackets and blocks nest deeper than
// maxNesting, before gonja's recursive parser sees them.
func checkNesting(src string) error {
	stream := tokens.LexAll(src, templateConfig())
	depth, blocks := 0, 0
	afterBlockBegin := false
	for !stream.End() {
		tok := stream.Next()
		if tok == nil || tok.Type == tokens.EOF {
			break
		}
		switch tok.Type {
		case tokens.Error:
			return nil // the parser reports it
		case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
			depth++
		case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			depth--
		case tokens.BlockBegin:
			afterBlockBegin = true
			continue
		case tokens.Name:
			if afterBlockBegin {
				switch {
				case blockTags[tok.Val]:
					blocks++
				case strings.HasPrefix(tok.Val, "end") && blockTags[tok.Val[3:]]:
					blocks--
				}
			}
		}
		afterBlockBegin = false
		if depth+blocks > maxNesting {
			return &ParseError{Line: tok.Line, Column: tok.Col,
				Msg: fmt.Sprintf("brackets and blocks nest deeper than %d", maxNesting)}
		}
	}
	return nil
}
