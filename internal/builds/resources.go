package builds

import (
	"context"
	"errors"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// buildARN returns a build's ARN.
func (s *Service) buildARN(id string) string {
	return arn.Builder{Region: s.cfg.Region, Account: s.cfg.Account}.ARN(arn.TypeBuild, id)
}

// setTags records the tags given at creation.
func (s *Service) setTags(ctx context.Context, tx store.Tx, arn string, tags []api.Tag) error {
	if s.cfg.SetTags == nil || len(tags) == 0 {
		return nil
	}
	return s.cfg.SetTags(ctx, tx, arn, tags)
}

// deleteTags removes a deleted build's tags.
func (s *Service) deleteTags(ctx context.Context, tx store.Tx, arn string) error {
	if s.cfg.RemoveTags == nil {
		return nil
	}
	return s.cfg.RemoveTags(ctx, tx, arn)
}

// Exists reports whether the build with this ID (or ARN) exists, for the
// tagging operations (TagResource and friends on a build ARN).
func (s *Service) Exists(ctx context.Context, tx store.Tx, buildIDOrARN string) (bool, error) {
	_, err := tx.Get(ctx, hosting.KindBuild, buildIDOf(buildIDOrARN))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
