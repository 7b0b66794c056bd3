package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
)

// Config names the Gitea, the repository and the pull request a Client
// works on.
type Config struct {
	// URL is Gitea's root URL, such as https://gitea.example.com, without
	// /api/v1, credentials or query.
	URL string
	// Token is an access token (see the package comment for its scopes).
	// It travels in the Authorization header and nowhere else.
	Token string
	// Owner and Repo name the repository.
	Owner string
	Repo  string
	// PullRequest is the pull request's number; zero when the run has
	// none, which leaves Reviews, Comments and PullRequest unusable.
	PullRequest int64
	// HTTPClient sends every request, through the retrying transport; nil
	// means a new http.Client. It is copied, never changed.
	HTTPClient *http.Client
	// Retry bounds retries and waits; zero fields take its defaults.
	Retry forgehttp.Policy
}

// Client is a connection to one repository on one Gitea. Its views
// (Reviews, Comments, Teams, PullRequest, PullRequestStates, Statuses)
// implement runner's ports; it is safe for concurrent use.
type Client struct {
	url   string
	token string
	owner string
	repo  string
	pull  int64
	http  *http.Client
	// pageSize is how many items a list asks for per page; tests make it
	// small so that every list really spans pages.
	pageSize int
}

const userAgent = "nova (+https://github.com/nova-platform/nova)"

// New checks cfg and that cfg.URL answers as Gitea's API with cfg.Token.
func New(ctx context.Context, cfg Config) (*Client, error) {
	base, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	hc.Transport = forgehttp.New(forgehttp.NewConditional(hc.Transport), cfg.Retry)
	c := &Client{
		url:      base,
		token:    cfg.Token,
		owner:    cfg.Owner,
		repo:     cfg.Repo,
		pull:     cfg.PullRequest,
		http:     hc,
		pageSize: defaultPageSize,
	}
	// No request here: a job's budget is a few calls per contract, and a
	// version check on every connection was one more. The first call
	// that fails tells a wrong URL apart (Client.fail).
	return c, nil
}

// checkConfig returns Gitea's root URL from cfg, or why cfg cannot work.
// A URL holding credentials or a query is refused and never repeated: a
// token may sit in either.
func checkConfig(cfg Config) (string, error) {
	u, err := url.Parse(cfg.URL)
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // its message repeats the whole URL
	}
	switch {
	case cfg.URL == "":
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: no URL")
	case err != nil:
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: reading the URL: %w", err)
	case u.User != nil:
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: the URL holds credentials; give the token as Token instead")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: the URL has a query or fragment; give Gitea's root URL")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: URL %q is not an http(s) URL", u.String())
	case cfg.Token == "":
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: no token")
	case cfg.Owner == "" || cfg.Repo == "":
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: no repository (owner %q, repo %q)", cfg.Owner, cfg.Repo)
	case cfg.PullRequest < 0:
		return "", runner.Errorf(runner.ConfigInvalid, "gitea: pull request number %d is negative", cfg.PullRequest)
	}
	return strings.TrimSuffix(strings.TrimSuffix(u.String(), "/"), "/api/v1"), nil
}

// api is an SDK client bound to ctx. The SDK keeps its context in the
// client, so each call gets its own; creating one costs no request, since
// New has already asked for the version.
func (c *Client) api(ctx context.Context) *sdk.Client {
	cl, err := sdk.NewClient(c.url,
		sdk.SetHTTPClient(c.http),
		sdk.SetToken(c.token),
		sdk.SetContext(ctx),
		sdk.SetUserAgent(userAgent),
		sdk.SetGiteaVersion(""),
	)
	if err != nil {
		// None of the options above can fail, and the version check is off.
		panic(fmt.Sprintf("gitea: building the SDK client: %v", err))
	}
	return cl
}

// Reviews is the pull request's reviews as an approval source.
func (c *Client) Reviews() *Reviews { return &Reviews{c: c} }

// Comments is the pull request's /nova comments as an approval source.
func (c *Client) Comments() *Comments { return &Comments{c: c} }

// Teams answers team membership in the organisations of this Gitea.
func (c *Client) Teams() *Teams { return &Teams{c: c} }

// PullRequest is the change under review and Nova's comment on it.
func (c *Client) PullRequest() *PullRequest { return &PullRequest{c: c} }

// Statuses sets commit statuses in the repository.
func (c *Client) Statuses() *Statuses { return &Statuses{c: c} }

// prName names the pull request in messages.
func (c *Client) prName() string {
	return fmt.Sprintf("pull request %s/%s#%d", c.owner, c.repo, c.pull)
}

// needPull fails when no pull request was configured.
func (c *Client) needPull(activity string) error {
	if c.pull <= 0 {
		return runner.Errorf(runner.ConfigInvalid, "%s: no pull request number configured (the run has no pull request)", activity)
	}
	return nil
}

// pullRequest reads the pull request.
func (c *Client) pullRequest(ctx context.Context) (*sdk.PullRequest, error) {
	activity := "reading " + c.prName()
	if err := c.needPull(activity); err != nil {
		return nil, err
	}
	pr, resp, err := c.api(ctx).GetPullRequest(c.owner, c.repo, c.pull)
	if err != nil {
		return nil, c.fail(ctx, activity, resp, err)
	}
	if pr.Head == nil || pr.Head.Sha == "" || pr.Base == nil || pr.Base.Sha == "" {
		return nil, runner.Errorf(runner.ForgeAPIFailed, "%s: gitea names no head or base commit", activity)
	}
	return pr, nil
}
