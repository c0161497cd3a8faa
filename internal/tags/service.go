package tags

import (
	"context"
	"strings"
	"sync"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/store"
)

// ExistsFunc reports whether the resource with this ID exists (id is the part
// of the ARN after "<type>/"; for a game session "<fleet ID>/<game session
// ID>"). It runs inside the tagging operation's transaction.
type ExistsFunc func(ctx context.Context, tx store.Tx, id string) (bool, error)

// Service serves TagResource, UntagResource and ListTagsForResource for
// every registered resource type.
type Service struct {
	st store.Store

	mu     sync.RWMutex
	exists map[string]ExistsFunc // by lower-case resource type
}

// New returns a Service storing tags in st. Register each taggable resource
// type with RegisterResource before serving requests.
func New(st store.Store) *Service {
	return &Service{st: st, exists: make(map[string]ExistsFunc)}
}

// RegisterResource makes resources of resourceType (an arn.Type* constant)
// taggable; exists tells whether one exists. A later registration of the
// same type replaces the earlier one.
func (s *Service) RegisterResource(resourceType string, exists func(ctx context.Context, tx store.Tx, id string) (bool, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exists[strings.ToLower(resourceType)] = exists
}

// resolve checks that the ARN names an existing resource of a registered
// type and returns its tag record ID.
func (s *Service) resolve(ctx context.Context, tx store.Tx, resourceARN string) (string, error) {
	a, err := arn.Parse(resourceARN)
	if err != nil || a.Service != arn.Service {
		return "", api.NewInvalidRequestException("ResourceARN %q is not a GameLift ARN (arn:aws:gamelift:<region>:<account>:<type>/<id>)", resourceARN)
	}
	if !arn.KnownType(a.ResourceType) {
		return "", api.NewInvalidRequestException("ResourceARN %q: %q is not a GameLift resource type", resourceARN, a.ResourceType)
	}
	typ := strings.ToLower(a.ResourceType)
	s.mu.RLock()
	exists := s.exists[typ]
	s.mu.RUnlock()
	if exists == nil {
		return "", api.NewNotFoundException("No resource found with ARN %s (Hoist does not serve %s resources)", resourceARN, typ)
	}
	ok, err := exists(ctx, tx, a.ResourceID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", api.NewNotFoundException("No resource found with ARN %s", resourceARN)
	}
	return typ + "/" + a.ResourceID, nil
}

// TagResource adds tags to a resource, replacing the value of a key it
// already has.
func (s *Service) TagResource(ctx context.Context, in *api.TagResourceRequest) (*api.TagResourceResponse, error) {
	resourceARN := api.ToString(in.ResourceARN)
	add, err := fromAPI(in.Tags)
	if err != nil {
		return nil, err
	}
	err = s.st.Update(ctx, func(tx store.Tx) error {
		id, err := s.resolve(ctx, tx, resourceARN)
		if err != nil {
			return err
		}
		have, err := read(ctx, tx, id)
		if err != nil {
			return err
		}
		list := merge(have, add)
		if len(list) > MaxTags {
			return api.NewTaggingFailedException("Tagging %s would give it %d tags; a resource may have at most %d", resourceARN, len(list), MaxTags)
		}
		return write(ctx, tx, id, resourceARN, list)
	})
	if err != nil {
		return nil, err
	}
	return &api.TagResourceResponse{}, nil
}

// UntagResource removes tags by key; keys the resource does not have are
// ignored.
func (s *Service) UntagResource(ctx context.Context, in *api.UntagResourceRequest) (*api.UntagResourceResponse, error) {
	resourceARN := api.ToString(in.ResourceARN)
	for _, k := range in.TagKeys {
		if err := checkKey(k, "TagKeys"); err != nil {
			return nil, err
		}
	}
	err := s.st.Update(ctx, func(tx store.Tx) error {
		id, err := s.resolve(ctx, tx, resourceARN)
		if err != nil {
			return err
		}
		have, err := read(ctx, tx, id)
		if err != nil {
			return err
		}
		return write(ctx, tx, id, resourceARN, remove(have, in.TagKeys))
	})
	if err != nil {
		return nil, err
	}
	return &api.UntagResourceResponse{}, nil
}

// ListTagsForResource returns a resource's tags in the order they were
// first added.
func (s *Service) ListTagsForResource(ctx context.Context, in *api.ListTagsForResourceRequest) (*api.ListTagsForResourceResponse, error) {
	var out []api.Tag
	err := s.st.View(ctx, func(tx store.Tx) error {
		id, err := s.resolve(ctx, tx, api.ToString(in.ResourceARN))
		if err != nil {
			return err
		}
		list, err := read(ctx, tx, id)
		out = toAPI(list)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []api.Tag{}
	}
	return &api.ListTagsForResourceResponse{Tags: out}, nil
}
