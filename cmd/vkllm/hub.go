package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/hub"
)

// resolveModel is the local path of a model or adapter argument: a Hub
// name (hf://OWNER/REPO[@REV][:QUANT|/FILE]) is pulled into the Hugging
// Face cache first, with a bar on stderr when that is a terminal;
// anything else is returned as it is. It is the one resolver every
// command uses for every path it takes (--model, --lora, --draft,
// --peer-model, inspect's PATH), through resolvePaths or, for bench,
// resolveFlags.
func resolveModel(ctx context.Context, stderr io.Writer, name string) (string, error) {
	if !hub.IsName(name) {
		return name, nil
	}
	return pullHub(ctx, name, "", stderr, false)
}

// flagPath is a flag's value that may be a Hub name: flag names it in an
// error ("--lora a").
type flagPath struct {
	flag string
	path *string
}

// resolvePaths resolves each path in place (resolveModel), in order,
// stopping at the first error, which names its flag.
func resolvePaths(ctx context.Context, stderr io.Writer, paths ...flagPath) error {
	for _, p := range paths {
		local, err := resolveModel(ctx, stderr, *p.path)
		if err != nil {
			return fmt.Errorf("%s: %w", p.flag, err)
		}
		*p.path = local
	}
	return nil
}

// resolveMap resolves every value of m (NAME=PATH flags) in place, in
// the order of the names.
func resolveMap(ctx context.Context, stderr io.Writer, flag string, m map[string]string) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := m[n]
		if err := resolvePaths(ctx, stderr, flagPath{flag + " " + n, &p}); err != nil {
			return err
		}
		m[n] = p
	}
	return nil
}

// pullHub pulls a Hub name into the cache (dir, else huggingface_hub's)
// and is the model's local path. Off a terminal, plain prints a line at
// each quarter of the download.
func pullHub(ctx context.Context, name, dir string, progress io.Writer, plain bool) (string, error) {
	r, err := hub.Parse(name)
	if err != nil {
		return "", err
	}
	c := hub.FromEnv()
	if dir != "" {
		c.CacheDir = dir
	}
	b := newBar(progress, "pulling "+r.RepoID(), plain)
	c.Progress = b.Update
	m, err := c.Pull(ctx, r)
	b.Done(!plain)
	if err != nil {
		return "", err
	}
	return m.Path, nil
}

// resolveFlags pulls the Hub names given to the named flags of args
// (--model hf://…, -model=hf://…) and puts their local paths in their
// place, for a command whose flags are parsed elsewhere (bench). Every
// occurrence before "--" counts: the value of another flag that reads
// "--model" would be taken for the flag.
func resolveFlags(ctx context.Context, stderr io.Writer, args []string, names ...string) ([]string, error) {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		flag, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		known := false
		for _, n := range names {
			known = known || flag == n
		}
		if !known {
			continue
		}
		if !hasVal {
			if i+1 >= len(out) {
				break
			}
			i++
			val = out[i]
		}
		p, err := resolveModel(ctx, stderr, val)
		if err != nil {
			return nil, err
		}
		if hasVal {
			out[i] = a[:strings.IndexByte(a, '=')+1] + p
		} else {
			out[i] = p
		}
	}
	return out, nil
}

// benchPathFlags are bench's flags that take a model path (its --draft
// also takes "ngram" and "miss", which are not Hub names).
var benchPathFlags = []string{"model", "peer-model", "draft"}

// list is `vkllm list`: the models in the Hugging Face cache, with their
// sizes on disk and the files of each snapshot.
func list(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "list")
	dir := fs.String("dir", "", "the Hugging Face cache folder (default: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	cache := *dir
	if cache == "" {
		cache = hub.FromEnv().CacheDir
	}
	repos, err := hub.List(cache)
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tREVISION\tSIZE\tFILES")
	for _, r := range repos {
		for i, s := range r.Snapshots {
			rev := s.Commit[:min(len(s.Commit), 12)]
			if len(s.Refs) > 0 {
				rev = strings.Join(s.Refs, ",") + " (" + rev + ")"
			}
			sz := ""
			if i == 0 {
				sz = human(r.Size)
			}
			names := make([]string, len(s.Files))
			for j, f := range s.Files {
				names[j] = f.Name
			}
			fmt.Fprintf(w, "hf://%s\t%s\t%s\t%s\n", r.Repo, rev, sz, strings.Join(names, " "))
		}
	}
	w.Flush()
	return 0
}

// rm is `vkllm rm NAME`: it removes a model from the Hugging Face cache.
func rm(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "rm")
	dir := fs.String("dir", "", "the Hugging Face cache folder (default as for vkllm list)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	err := func() error {
		if !hub.IsName(fs.Arg(0)) {
			return errors.New("rm takes a Hub name, hf://OWNER/REPO[@REVISION][:QUANT|/FILE]; vkllm list shows them")
		}
		r, err := hub.Parse(fs.Arg(0))
		if err != nil {
			return err
		}
		cache := *dir
		if cache == "" {
			cache = hub.FromEnv().CacheDir
		}
		ctx, cancel := e.interruptible(ctx) // it waits for a pull's lock on a blob
		defer cancel()
		freed, err := hub.Remove(ctx, cache, r)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed %s (%s freed)\n", r, human(freed))
		return nil
	}()
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	return 0
}

// human is a byte count for a person.
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
