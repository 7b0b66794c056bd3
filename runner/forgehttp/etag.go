package forgehttp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Conditional repeats a GET the process made before as a conditional
// request: the last answer's ETag goes out as If-None-Match, and a 304
// Not Modified is answered from the kept copy. GitHub does not count a
// 304 against the primary rate limit, so the reads a job repeats for each
// contract (the pull request, its reviews, its comments) cost the limit
// once. Answers are kept in memory only, for this process.
//
// It is not gregjones/httpcache, the library go-github's documentation
// names: that one is archived, and as a full HTTP cache it would also
// answer from its copy without asking when an answer allows it (GitHub's
// carry max-age=60), which a gate reading approvals must never do. Here
// every read reaches the forge; only the body of an unchanged one is
// not sent again.
type Conditional struct {
	next http.RoundTripper

	mu      sync.Mutex
	entries map[string]*kept
	size    int
}

// kept is one answer: its ETag, status, headers and body.
type kept struct {
	etag   string
	status int
	header http.Header
	body   []byte
}

const (
	// maxKeptBody is the largest answer kept: a page of a list is well
	// under it.
	maxKeptBody = 4 << 20
	// maxKeptTotal bounds the memory all kept answers take; past it the
	// copies are dropped and the next reads fetch in full again.
	maxKeptTotal = 64 << 20
)

// NewConditional sends over next (nil: http.DefaultTransport).
func NewConditional(next http.RoundTripper) *Conditional {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Conditional{next: next, entries: map[string]*kept{}}
}

// key names a request's answer: its URL, what it accepts, and who asks,
// as a hash, so that two tokens never share an answer and no token is
// kept in the clear.
func key(req *http.Request) string {
	auth := sha256.Sum256([]byte(req.Header.Get("Authorization")))
	return req.URL.String() + "\n" + req.Header.Get("Accept") + "\n" + hex.EncodeToString(auth[:])
}

// RoundTrip implements http.RoundTripper.
func (c *Conditional) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" || req.Header.Get("Range") != "" {
		return c.next.RoundTrip(req)
	}
	k := key(req)
	c.mu.Lock()
	e := c.entries[k]
	c.mu.Unlock()
	out := req
	if e != nil {
		out = req.Clone(req.Context())
		out.Header.Set("If-None-Match", e.etag)
	}
	resp, err := c.next.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	if e != nil && resp.StatusCode == http.StatusNotModified {
		drain(resp)
		return e.answer(req, resp.Header), nil
	}
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || etag == "" || resp.ContentLength > maxKeptBody {
		if e != nil {
			c.forget(k)
		}
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeptBody+1))
	if err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	if len(body) > maxKeptBody {
		// Too long to keep (its length was not announced): the caller
		// reads it whole, what was read first and then the rest.
		if e != nil {
			c.forget(k)
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return resp, nil
	}
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.keep(k, &kept{etag: etag, status: resp.StatusCode, header: resp.Header.Clone(), body: body})
	return resp, nil
}

func (c *Conditional) keep(k string, e *kept) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.size -= len(old.body)
	}
	if c.size+len(e.body) > maxKeptTotal {
		c.entries, c.size = map[string]*kept{}, 0
	}
	c.entries[k] = e
	c.size += len(e.body)
}

func (c *Conditional) forget(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.size -= len(old.body)
		delete(c.entries, k)
	}
}

// answer is the kept answer to req, with the headers of the 304 that
// confirmed it laid over the kept ones (RFC 9111 4.3.4): the rate-limit
// headers are the 304's, which are current.
func (e *kept) answer(req *http.Request, fresh http.Header) *http.Response {
	h := e.header.Clone()
	for name, values := range fresh {
		switch name {
		case "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding":
			// The 304's own, not the body's.
		default:
			h[name] = values
		}
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", e.status, http.StatusText(e.status)),
		StatusCode:    e.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
	}
}
