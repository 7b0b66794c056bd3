package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
)

// DefaultAPIURL is github.com's REST API. GitHub Enterprise Server serves it
// under https://HOST/api/v3/, which Actions passes as GITHUB_API_URL.
const DefaultAPIURL = "https://api.github.com/"

// Config is everything the adapter needs; action/ fills it from the
// action's inputs and environment.
type Config struct {
	// APIURL is the REST API's base URL; empty means DefaultAPIURL.
	APIURL string
	// Token is sent as a Bearer token to APIURL's host and nowhere else.
	Token string
	// Owner and Repo name the repository every call is about.
	Owner, Repo string
	// PullRequest is the pull request under review (0 when the run has
	// none: then the review, comment, change and commenter types fail).
	PullRequest int
	// RunID is the workflow run this process runs in; its environment
	// approvals bind the bundle it produced and no other.
	RunID int64
	// HTTPClient is copied, never modified; its Transport (default
	// http.DefaultTransport) carries the requests.
	HTTPClient *http.Client
	// Retry bounds retries and waits; zero fields take the defaults.
	Retry forgehttp.Policy
}

// String keeps the token out of anything that prints a Config.
func (c Config) String() string {
	return fmt.Sprintf("github.Config{APIURL: %q, Owner: %q, Repo: %q, PullRequest: %d, RunID: %d}",
		c.APIURL, c.Owner, c.Repo, c.PullRequest, c.RunID)
}

// GoString is String, so %#v does not print the token either.
func (c Config) GoString() string { return c.String() }

// Client is a GitHub API client for one repository. Its methods return the
// small types that implement the runner's ports.
type Client struct {
	gh          *gh.Client
	owner, repo string
	pr          int
	runID       int64
	// token is kept only to scrub it from messages GitHub sends back.
	token secret
}

// New checks cfg and builds a Client. It makes no request.
func New(cfg Config) (*Client, error) {
	if cfg.Owner == "" || cfg.Repo == "" {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: the repository owner and name are required")
	}
	if cfg.Token == "" {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: no token; pass the workflow's GITHUB_TOKEN or an app token")
	}
	// A token that cannot be a header value would make net/http fail on
	// every request; say so here, without echoing it.
	if !printable(cfg.Token) {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: the token holds characters a token cannot hold (whitespace or control characters)")
	}
	if cfg.PullRequest < 0 || cfg.RunID < 0 {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: pull request %d or workflow run %d is negative", cfg.PullRequest, cfg.RunID)
	}
	raw := cfg.APIURL
	if raw == "" {
		raw = DefaultAPIURL
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.User != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: API URL %q is not an http(s) URL without credentials", raw)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}

	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Transport = &transport{
		// Retries outside, so that a retried read is conditional too.
		next:   forgehttp.New(forgehttp.NewConditional(hc.Transport), cfg.Retry),
		token:  secret(cfg.Token),
		scheme: base.Scheme,
		host:   base.Host,
	}

	client := gh.NewClient(hc)
	client.BaseURL = base
	client.UserAgent = "nova (+https://github.com/nova-platform/nova)"
	return &Client{
		gh:    client,
		owner: cfg.Owner,
		repo:  cfg.Repo,
		pr:    cfg.PullRequest,
		runID: cfg.RunID,
		token: secret(cfg.Token),
	}, nil
}

// pullRequest fetches the configured pull request; reviews and the change
// reader both need its current head.
func (c *Client) pullRequest(ctx context.Context) (*gh.PullRequest, error) {
	if err := c.needPullRequest(); err != nil {
		return nil, err
	}
	pr, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, c.pr)
	if err != nil {
		return nil, c.fail(ctx, err, permPullsRead, "reading pull request %d", c.pr)
	}
	return pr, nil
}

func (c *Client) needPullRequest() error {
	if c.pr <= 0 {
		return runner.Errorf(runner.ConfigInvalid, "github: this run has no pull request, so it has no reviews, comments or change to read")
	}
	return nil
}

// printable reports whether s is visible ASCII only, as every GitHub token
// format is.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
