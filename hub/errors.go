package hub

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors of the package. The typed errors below wrap (errors.Is) one of
// them where it fits.
var (
	// ErrNotFound: the Hub has no such repository, revision or file.
	ErrNotFound = errors.New("hub: not found")
	// ErrOffline: HF_HUB_OFFLINE is set (or the Hub cannot be reached)
	// and the cache does not hold what was asked for.
	ErrOffline = errors.New("hub: not in the cache, and offline")
	// ErrChecksum: a downloaded file's digest is not the Hub's.
	ErrChecksum = errors.New("hub: checksum mismatch")
	// ErrNoSpace: the cache's disk has less room than the download needs.
	ErrNoSpace = errors.New("hub: not enough disk space")
	// ErrNoMatch: no file of the repository fits the name (no GGUF of the
	// quantisation, no such file, neither GGUF nor safetensors weights).
	ErrNoMatch = errors.New("hub: no file matches")
	// ErrAmbiguous: several models of the repository fit the name.
	ErrAmbiguous = errors.New("hub: several models match")
)

// AccessError is a 401 or 403 from the Hub: the repository is gated
// (its licence must be accepted on its page), private, or the token is
// wrong.
type AccessError struct {
	Repo     string // OWNER/REPO
	URL      string // the repository's page, where its licence is accepted
	Status   int
	HasToken bool   // whether a token was sent
	Message  string // the Hub's X-Error-Message, if any
}

func (e *AccessError) Error() string {
	s := fmt.Sprintf("hub: %s: %d %s", e.Repo, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	s += ": the repository is gated or private; accept its licence at " + e.URL + " while logged in, then "
	if e.HasToken {
		return s + "check that HF_TOKEN (or the token file) belongs to that account and may read it"
	}
	return s + "set HF_TOKEN to an access token (https://huggingface.co/settings/tokens) or log in with `hf auth login`"
}

// HTTPError is any other failed request to the Hub.
type HTTPError struct {
	URL     string
	Status  int
	Code    string // the Hub's X-Error-Code (RepoNotFound, EntryNotFound, RevisionNotFound, …)
	Message string // its X-Error-Message
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("hub: GET %s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " [" + e.Code + "]"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap is ErrNotFound for a 404.
func (e *HTTPError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

// ChecksumError is a downloaded file whose digest is not the one the Hub
// lists; the partial file is deleted, so a retry starts afresh.
type ChecksumError struct {
	Repo, File string
	Algo       string // "sha256" (LFS files) or "git-sha1" (the git blob id of small files)
	Want, Got  string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("hub: %s: %s has %s %s, the Hub lists %s; the download was deleted", e.Repo, e.File, e.Algo, e.Got, e.Want)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// SpaceError: the download needs more bytes than the cache's disk has free.
type SpaceError struct {
	Dir        string
	Need, Free int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("hub: the download needs %s but %s has %s free (set HF_HUB_CACHE to another disk)", size(e.Need), e.Dir, size(e.Free))
}

func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// size prints n bytes for a person.
func size(n int64) string {
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
