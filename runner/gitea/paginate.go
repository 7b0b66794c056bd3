package gitea

import (
	"context"
	"fmt"
	"strconv"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// defaultPageSize is Gitea's default MAX_RESPONSE_ITEMS: a server allowing
// fewer sends fewer, and X-Total-Count still says how many there are.
const defaultPageSize = 50

// maxPages stops a list that never ends (a server ignoring page while
// inventing new items) from running forever.
const maxPages = 1000

// paginate reads every page of a list. Gitea 1.23 does not say "last page"
// the same way on every route: most send X-Total-Count only, some a Link
// header too, and the issue comments route ignores page and limit and
// returns everything at once. So the list ends at whichever comes first:
// as many distinct items as X-Total-Count, no "next" in a Link header, a
// short page when the server sends neither, an empty page, or a page that
// adds nothing new. Items are told apart by key; those without one are
// dropped.
func paginate[T any](ctx context.Context, c *Client, activity string, key func(T) string,
	list func(sdk.ListOptions) ([]T, *sdk.Response, error),
) ([]T, error) {
	seen := map[string]bool{}
	var all []T
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, runner.Errorf(runner.ForgeAPIFailed, "%s: still more after %d pages", activity, maxPages)
		}
		items, resp, err := list(sdk.ListOptions{Page: page, PageSize: c.pageSize})
		if err != nil {
			return nil, c.fail(ctx, fmt.Sprintf("%s (page %d)", activity, page), resp, err)
		}
		fresh := 0
		for _, it := range items {
			k := key(it)
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			all = append(all, it)
			fresh++
		}
		if fresh == 0 || lastPage(resp, len(all), len(items), c.pageSize) {
			return all, nil
		}
	}
}

func lastPage(resp *sdk.Response, seen, got, pageSize int) bool {
	if resp == nil || resp.Response == nil {
		return got < pageSize
	}
	if total, err := strconv.Atoi(resp.Header.Get("X-Total-Count")); err == nil {
		return seen >= total
	}
	if resp.Header.Get("Link") != "" {
		return resp.NextPage == 0
	}
	return got < pageSize
}

func idKey(id int64) string {
	if id <= 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}
