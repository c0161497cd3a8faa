package hosts

import (
	"context"

	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// ListHostsPage lists up to limit hosts by ID after the cursor token (""
// for the first page), and returns the next page's cursor ("" at the
// end): ListHosts page by page, for the console.
func (s *Service) ListHostsPage(ctx context.Context, token string, limit int) ([]HostInfo, string, error) {
	var out []HostInfo
	var next string
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		recs, n, err := paging.Records(ctx, tx, store.Query{Kind: KindHost, Order: store.OrderID}, token, limit, nil)
		if err != nil {
			return err
		}
		out, next = make([]HostInfo, 0, len(recs)), n
		for _, r := range recs {
			h := new(Host)
			if err := store.Decode(r, h); err != nil {
				return err
			}
			l := hostLoad{Host: h, Used: map[string]int{}}
			if err := s.countLoad(ctx, tx, &l, ""); err != nil {
				return err
			}
			out = append(out, info(h, total(l.Used)))
		}
		return nil
	})
	return out, next, err
}
