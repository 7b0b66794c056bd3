package github

import (
	"fmt"

	gh "github.com/google/go-github/v66/github"
)

// perPage is GitHub's largest page: fewer requests, fewer rate-limit hits.
const perPage = 100

// maxPages stops a list whose Link header never ends (a proxy rewriting
// it, a bug): 100 000 items is far beyond any pull request Nova reads.
const maxPages = 1000

// listAll reads every page of a list, following the Link header's
// rel="next" (go-github's Response.NextPage). A partial list is never
// returned: an approval or an author on page 4 matters as much as one on
// page 1.
func listAll[T any](fetch func(gh.ListOptions) ([]T, *gh.Response, error)) ([]T, error) {
	var all []T
	opts := gh.ListOptions{PerPage: perPage}
	for pages := 1; ; pages++ {
		items, resp, err := fetch(opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if resp == nil || resp.NextPage == 0 {
			return all, nil
		}
		if resp.NextPage <= max(opts.Page, 1) {
			return nil, fmt.Errorf("page %d links back to page %d as the next one", max(opts.Page, 1), resp.NextPage)
		}
		if pages == maxPages {
			return nil, fmt.Errorf("more than %d pages", maxPages)
		}
		opts.Page = resp.NextPage
	}
}
