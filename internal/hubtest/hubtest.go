// Package hubtest is a stand-in for the Hugging Face Hub for tests, written
// from the Hub's documented HTTP interface: New starts one on loopback;
// Add puts a repository on it; point a hub.Client (or HF_ENDPOINT) at
// its API URL. It counts what it serves and can misbehave on demand (a
// cut connection, a wrong digest, a claimed size, no Range support).
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hub stands in for the Hub, written from its documented HTTP
// interface: the model info API with LFS metadata
// (/api/models/{repo}/revision/{rev}?blobs=true), resolve/{rev}/{file}
// answering small files itself and redirecting LFS files to another host
// (cdn) that honours Range, the X-Error-Code headers, 401 for a gated
// repository without a token (403 with a wrong one) and 401
// RepoNotFound for an unknown repository.
type Hub struct {
	API, CDN *httptest.Server
	Token    string // the token gated repositories accept

	Mu        sync.Mutex
	Repos     map[string]*Repo
	InfoGets  int
	FileGets  map[string]int    // file path → resolve GETs
	BlobGets  map[string]int    // sha256 → CDN GETs
	Ranges    []string          // the Range headers the CDN got
	CDNAuth   []string          // Authorization headers that reached the CDN (must stay empty)
	CutAt     map[string]int64  // sha256 → cut the next CDN answer after this many bytes
	LieSHA    map[string]string // file → sha256 the info claims instead
	LieSize   map[string]int64  // file → size the info claims instead
	HoldBlobs chan struct{}     // when set, the CDN waits on it before serving
	NoRange   bool              // the CDN ignores Range (answers 200 with the whole file)
}

type Repo struct {
	Commit string
	Gated  bool
	Files  map[string][]byte
}

// IsLFS: the Hub stores weights (and anything large) on LFS.
func IsLFS(name string, data []byte) bool {
	return strings.HasSuffix(name, ".gguf") || strings.HasSuffix(name, ".safetensors") || len(data) > 10<<10
}

func GitOID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func New(t testing.TB) *Hub {
	h := &Hub{Repos: map[string]*Repo{}, FileGets: map[string]int{}, BlobGets: map[string]int{},
		CutAt: map[string]int64{}, LieSHA: map[string]string{}, LieSize: map[string]int64{}}
	h.CDN = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.API = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	t.Cleanup(h.API.Close)
	t.Cleanup(h.CDN.Close)
	return h
}

// add puts a repository on the hub; its commit is derived from its name.
func (h *Hub) Add(id string, gated bool, files map[string][]byte) *Repo {
	s := sha1.Sum([]byte(id))
	r := &Repo{Commit: hex.EncodeToString(s[:]), Gated: gated, Files: files}
	h.Mu.Lock()
	h.Repos[id] = r
	h.Mu.Unlock()
	return r
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

// repo finds the repository of a request and checks its access; nil when
// it answered already. As on the Hub, a gated repository's model info is
// public; its files need a token with access (401 without one, 403 with
// another).
func (h *Hub) repo(w http.ResponseWriter, r *http.Request, id string, file bool) *Repo {
	h.Mu.Lock()
	repo := h.Repos[id]
	h.Mu.Unlock()
	auth := r.Header.Get("Authorization")
	if repo == nil {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String())
		return nil
	}
	if repo.Gated && file {
		switch auth {
		case "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			return nil
		case "Bearer " + h.Token:
		default:
			hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list.")
			return nil
		}
	}
	return repo
}

func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		id, rev, ok := strings.Cut(rest, "/revision/")
		if !ok || r.URL.Query().Get("blobs") != "true" {
			http.NotFound(w, r)
			return
		}
		h.Mu.Lock()
		h.InfoGets++
		h.Mu.Unlock()
		repo := h.repo(w, r, id, false)
		if repo == nil {
			return
		}
		if rev != "main" && rev != repo.Commit {
			hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
			return
		}
		type lfs struct {
			SHA256      string `json:"sha256"`
			Size        int64  `json:"size"`
			PointerSize int    `json:"pointerSize"`
		}
		type sibling struct {
			Name   string `json:"rfilename"`
			Size   int64  `json:"size"`
			BlobID string `json:"blobId"`
			LFS    *lfs   `json:"lfs,omitempty"`
		}
		var sibs []sibling
		h.Mu.Lock()
		for name, data := range repo.Files {
			s := sibling{Name: name, Size: int64(len(data)), BlobID: GitOID(data)}
			if n, ok := h.LieSize[name]; ok {
				s.Size = n
			}
			if IsLFS(name, data) {
				pointer := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", SHA256(data), len(data))
				s.BlobID = GitOID([]byte(pointer))
				s.LFS = &lfs{SHA256: SHA256(data), Size: s.Size, PointerSize: len(pointer)}
				if l, ok := h.LieSHA[name]; ok {
					s.LFS.SHA256 = l
				}
			} else if l, ok := h.LieSHA[name]; ok {
				s.BlobID = l
			}
			sibs = append(sibs, s)
		}
		h.Mu.Unlock()
		sort.Slice(sibs, func(i, j int) bool { return sibs[i].Name < sibs[j].Name })
		json.NewEncoder(w).Encode(map[string]any{"_id": "x", "id": id, "modelId": id, "sha": repo.Commit,
			"private": false, "gated": map[bool]any{true: "manual", false: false}[repo.Gated], "siblings": sibs})
		return
	}
	// /{owner}/{repo}/resolve/{rev}/{path}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo := h.repo(w, r, parts[0]+"/"+parts[1], true)
	if repo == nil {
		return
	}
	if parts[3] != "main" && parts[3] != repo.Commit {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+parts[3])
		return
	}
	name, _ := url.PathUnescape(parts[4])
	data, ok := repo.Files[name]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", name+" does not exist on \"main\"")
		return
	}
	h.Mu.Lock()
	h.FileGets[name]++
	h.Mu.Unlock()
	w.Header().Set("X-Repo-Commit", repo.Commit)
	if IsLFS(name, data) {
		w.Header().Set("X-Linked-Etag", `"`+SHA256(data)+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
		http.Redirect(w, r, h.CDN.URL+"/repos/xx/"+SHA256(data)+"?X-Amz-Signature=fake", http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+GitOID(data)+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// serveCDN answers a blob by its sha256, honouring Range; a blob with a
// cut set has its next answer broken off after that many bytes.
func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	h.Mu.Lock()
	h.BlobGets[want]++
	if r.Header.Get("Range") != "" {
		h.Ranges = append(h.Ranges, r.Header.Get("Range"))
	}
	if a := r.Header.Get("Authorization"); a != "" {
		h.CDNAuth = append(h.CDNAuth, a)
	}
	var data []byte
	for _, repo := range h.Repos {
		for name, d := range repo.Files {
			if IsLFS(name, d) && SHA256(d) == want {
				data = d
			}
		}
	}
	cut, hasCut := h.CutAt[want]
	delete(h.CutAt, want)
	hold := h.HoldBlobs
	h.Mu.Unlock()
	if hold != nil {
		<-hold
	}
	if data == nil {
		http.NotFound(w, r)
		return
	}
	if hasCut {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-file
	}
	if h.NoRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

func (h *Hub) Count(m map[string]int, key string) int {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return m[key]
}

// Bytes is n bytes of a pattern that names the file (so files differ).
func Bytes(name string, n int) []byte {
	b := bytes.Repeat([]byte(name+"|"), n/(len(name)+1)+1)
	return b[:n]
}
