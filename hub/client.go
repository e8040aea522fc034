package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the Hub's address; HF_ENDPOINT replaces it (a mirror).
const DefaultEndpoint = "https://huggingface.co"

// Client talks to the Hub and keeps what it fetches in the cache. The
// zero value is not usable; FromEnv makes one as huggingface_hub would.
type Client struct {
	// Endpoint is the Hub's base URL (HF_ENDPOINT; default DefaultEndpoint).
	Endpoint string
	// Token is sent as a bearer token to Endpoint, never to the hosts
	// it redirects to (HF_TOKEN, else the token file).
	Token string
	// CacheDir is the hub cache, shared with huggingface_hub (HF_HUB_CACHE,
	// else $HF_HOME/hub, else ~/.cache/huggingface/hub).
	CacheDir string
	// Offline uses the cache only (HF_HUB_OFFLINE=1).
	Offline bool
	// HTTP does the requests (nil: http.DefaultClient).
	HTTP *http.Client
	// Progress, if set, is called from any goroutine with the bytes of
	// a pull so far out of its total, over all its files at once.
	Progress func(done, total int64)
	// Parallel is how many files download at once (0: 4).
	Parallel int
}

// FromEnv is a Client set from huggingface_hub's environment variables:
// HF_ENDPOINT, HF_TOKEN (else HUGGING_FACE_HUB_TOKEN, else the file at
// HF_TOKEN_PATH, else $HF_HOME/token), HF_HUB_CACHE (else $HF_HOME/hub;
// HF_HOME defaults to $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface) and HF_HUB_OFFLINE.
func FromEnv() *Client {
	home := os.Getenv("HF_HOME")
	if home == "" {
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			home = filepath.Join(x, "huggingface")
		} else if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, ".cache", "huggingface")
		}
	}
	c := &Client{Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"), Token: os.Getenv("HF_TOKEN"), CacheDir: os.Getenv("HF_HUB_CACHE")}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.CacheDir == "" {
		c.CacheDir = os.Getenv("HUGGINGFACE_HUB_CACHE") // the older name
	}
	if c.CacheDir == "" && home != "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	if c.Token == "" {
		c.Token = os.Getenv("HUGGING_FACE_HUB_TOKEN") // the older name
	}
	if c.Token == "" {
		p := os.Getenv("HF_TOKEN_PATH")
		if p == "" && home != "" {
			p = filepath.Join(home, "token")
		}
		if b, err := os.ReadFile(p); err == nil && p != "" {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	switch strings.ToUpper(os.Getenv("HF_HUB_OFFLINE")) {
	case "1", "ON", "YES", "TRUE":
		c.Offline = true
	}
	return c
}

// File is one file of a repository, as the model info API lists it.
type File struct {
	Name   string // the path in the repository
	Size   int64
	SHA256 string // hex; set for LFS files (the cache's blob name)
	GitOID string // the git blob id (hex SHA-1); the blob name of a small file
}

// blob is the file's name under blobs/, as huggingface_hub names it: the
// SHA-256 of an LFS file, else its git blob id.
func (f File) blob() string {
	if f.SHA256 != "" {
		return f.SHA256
	}
	return f.GitOID
}

// Info is a repository at one commit.
type Info struct {
	Repo   string // OWNER/REPO
	Commit string // the commit the revision pointed at
	Files  []File
}

// Info asks the Hub's model info API for the repository at a revision,
// with its files' sizes and digests:
// GET {Endpoint}/api/models/{OWNER}/{REPO}/revision/{REVISION}?blobs=true.
func (c *Client) Info(ctx context.Context, r Ref) (*Info, error) {
	u := c.endpoint() + "/api/models/" + r.RepoID() + "/revision/" + url.PathEscape(r.Rev()) + "?blobs=true"
	resp, err := c.get(ctx, r, u, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			Name   string `json:"rfilename"`
			Size   int64  `json:"size"`
			BlobID string `json:"blobId"`
			LFS    *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("hub: %s: the model info is not JSON: %w", u, err)
	}
	if !isHex(body.SHA, 40) {
		return nil, fmt.Errorf("hub: %s: the model info has no commit sha (%q)", u, body.SHA)
	}
	info := &Info{Repo: r.RepoID(), Commit: strings.ToLower(body.SHA)}
	for _, s := range body.Siblings {
		if checkPath(s.Name) != "" {
			return nil, fmt.Errorf("hub: %s: the model info lists a bad file name %q", u, s.Name)
		}
		f := File{Name: s.Name, Size: s.Size, GitOID: strings.ToLower(s.BlobID)}
		if s.LFS != nil {
			f.SHA256, f.Size = strings.ToLower(s.LFS.SHA256), s.LFS.Size
		}
		if f.SHA256 != "" && !isHex(f.SHA256, 64) || f.GitOID != "" && !isHex(f.GitOID, 40) || f.Size < 0 {
			return nil, fmt.Errorf("hub: %s: the model info lists %s with a bad size or digest", u, s.Name)
		}
		info.Files = append(info.Files, f)
	}
	return info, nil
}

func (c *Client) endpoint() string {
	if c.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/")
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// get GETs u, following redirects (the token goes to the endpoint's host
// only), and is the response when its status is 200 or 206. rng, if set, is the Range header.
func (c *Client) get(ctx context.Context, r Ref, u, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	req.Header.Set("User-Agent", "vkllm")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	hc := *c.http()
	base, _ := url.Parse(c.endpoint())
	hc.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if base == nil || next.URL.Host != base.Host {
			next.Header.Del("Authorization") // the token is the Hub's, not the content host's
		}
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &netError{err}
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	msg := resp.Header.Get("X-Error-Message")
	code := resp.Header.Get("X-Error-Code")
	switch {
	case resp.StatusCode == http.StatusUnauthorized && code == "RepoNotFound":
		// the Hub answers 401 for a repo that does not exist (or is
		// private) when no token is sent
		if c.Token != "" {
			return nil, &HTTPError{URL: u, Status: http.StatusNotFound, Code: code, Message: msg}
		}
		fallthrough
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &AccessError{Repo: r.RepoID(), URL: c.endpoint() + "/" + r.RepoID(), Status: resp.StatusCode, HasToken: c.Token != "", Message: msg}
	}
	return nil, &HTTPError{URL: u, Status: resp.StatusCode, Code: code, Message: msg}
}

// netError is a request that got no answer (the Hub is unreachable);
// Pull then falls back to the cache, as huggingface_hub does.
type netError struct{ err error }

func (e *netError) Error() string { return "hub: " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

func isUnreachable(err error) bool {
	var ne *netError
	return errors.As(err, &ne) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
