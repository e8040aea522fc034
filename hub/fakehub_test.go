package hub

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

// fakeHub stands in for the Hub, written from its documented HTTP
// interface: the model info API with LFS metadata
// (/api/models/{repo}/revision/{rev}?blobs=true), resolve/{rev}/{file}
// answering small files itself and redirecting LFS files to another host
// (cdn) that honours Range, the X-Error-Code headers, 401 for a gated
// repository without a token (403 with a wrong one) and 401
// RepoNotFound for an unknown repository.
type fakeHub struct {
	t        *testing.T
	api, cdn *httptest.Server
	token    string // the token gated repositories accept

	mu        sync.Mutex
	repos     map[string]*fakeRepo
	infoGets  int
	fileGets  map[string]int    // file path → resolve GETs
	blobGets  map[string]int    // sha256 → CDN GETs
	ranges    []string          // the Range headers the CDN got
	cdnAuth   []string          // Authorization headers that reached the CDN (must stay empty)
	cut       map[string]int64  // sha256 → cut the next CDN answer after this many bytes
	lieSHA    map[string]string // file → sha256 the info claims instead
	lieSize   map[string]int64  // file → size the info claims instead
	holdBlobs chan struct{}     // when set, the CDN waits on it before serving
	noRange   bool              // the CDN ignores Range (answers 200 with the whole file)
}

type fakeRepo struct {
	commit string
	gated  bool
	files  map[string][]byte
}

// isLFS: the Hub stores weights (and anything large) on LFS.
func isLFS(name string, data []byte) bool {
	return strings.HasSuffix(name, ".gguf") || strings.HasSuffix(name, ".safetensors") || len(data) > 10<<10
}

func gitOID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, repos: map[string]*fakeRepo{}, fileGets: map[string]int{}, blobGets: map[string]int{},
		cut: map[string]int64{}, lieSHA: map[string]string{}, lieSize: map[string]int64{}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	t.Cleanup(h.api.Close)
	t.Cleanup(h.cdn.Close)
	return h
}

// add puts a repository on the hub; its commit is derived from its name.
func (h *fakeHub) add(id string, gated bool, files map[string][]byte) *fakeRepo {
	s := sha1.Sum([]byte(id))
	r := &fakeRepo{commit: hex.EncodeToString(s[:]), gated: gated, files: files}
	h.mu.Lock()
	h.repos[id] = r
	h.mu.Unlock()
	return r
}

func (h *fakeHub) client(cache string) *Client {
	return &Client{Endpoint: h.api.URL, CacheDir: cache}
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

// repo finds the repository of a request and checks its access; nil when
// it answered already.
func (h *fakeHub) repo(w http.ResponseWriter, r *http.Request, id string) *fakeRepo {
	h.mu.Lock()
	repo := h.repos[id]
	h.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if repo == nil {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String())
		return nil
	}
	if repo.gated {
		switch auth {
		case "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			return nil
		case "Bearer " + h.token:
		default:
			hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list.")
			return nil
		}
	}
	return repo
}

func (h *fakeHub) serveAPI(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		id, rev, ok := strings.Cut(rest, "/revision/")
		if !ok || r.URL.Query().Get("blobs") != "true" {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		h.infoGets++
		h.mu.Unlock()
		repo := h.repo(w, r, id)
		if repo == nil {
			return
		}
		if rev != "main" && rev != repo.commit {
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
		h.mu.Lock()
		for name, data := range repo.files {
			s := sibling{Name: name, Size: int64(len(data)), BlobID: gitOID(data)}
			if n, ok := h.lieSize[name]; ok {
				s.Size = n
			}
			if isLFS(name, data) {
				pointer := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", sha(data), len(data))
				s.BlobID = gitOID([]byte(pointer))
				s.LFS = &lfs{SHA256: sha(data), Size: s.Size, PointerSize: len(pointer)}
				if l, ok := h.lieSHA[name]; ok {
					s.LFS.SHA256 = l
				}
			} else if l, ok := h.lieSHA[name]; ok {
				s.BlobID = l
			}
			sibs = append(sibs, s)
		}
		h.mu.Unlock()
		sort.Slice(sibs, func(i, j int) bool { return sibs[i].Name < sibs[j].Name })
		json.NewEncoder(w).Encode(map[string]any{"_id": "x", "id": id, "modelId": id, "sha": repo.commit,
			"private": false, "gated": map[bool]any{true: "manual", false: false}[repo.gated], "siblings": sibs})
		return
	}
	// /{owner}/{repo}/resolve/{rev}/{path}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repo := h.repo(w, r, parts[0]+"/"+parts[1])
	if repo == nil {
		return
	}
	if parts[3] != "main" && parts[3] != repo.commit {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+parts[3])
		return
	}
	name, _ := url.PathUnescape(parts[4])
	data, ok := repo.files[name]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", name+" does not exist on \"main\"")
		return
	}
	h.mu.Lock()
	h.fileGets[name]++
	h.mu.Unlock()
	w.Header().Set("X-Repo-Commit", repo.commit)
	if isLFS(name, data) {
		w.Header().Set("X-Linked-Etag", `"`+sha(data)+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
		http.Redirect(w, r, h.cdn.URL+"/repos/xx/"+sha(data)+"?X-Amz-Signature=fake", http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitOID(data)+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// serveCDN answers a blob by its sha256, honouring Range; a blob with a
// cut set has its next answer broken off after that many bytes.
func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	h.mu.Lock()
	h.blobGets[want]++
	if r.Header.Get("Range") != "" {
		h.ranges = append(h.ranges, r.Header.Get("Range"))
	}
	if a := r.Header.Get("Authorization"); a != "" {
		h.cdnAuth = append(h.cdnAuth, a)
	}
	var data []byte
	for _, repo := range h.repos {
		for name, d := range repo.files {
			if isLFS(name, d) && sha(d) == want {
				data = d
			}
		}
	}
	cut, hasCut := h.cut[want]
	delete(h.cut, want)
	hold := h.holdBlobs
	h.mu.Unlock()
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
	if h.noRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

func (h *fakeHub) count(m map[string]int, key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m[key]
}

// bytesOf is n bytes of a pattern that names the file (so files differ).
func bytesOf(name string, n int) []byte {
	b := bytes.Repeat([]byte(name+"|"), n/(len(name)+1)+1)
	return b[:n]
}
