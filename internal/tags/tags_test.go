package tags

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
	"github.com/hoistgg/hoist/internal/store/journal"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := journal.Open(filepath.Join(t.TempDir(), "store"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func apiTags(kv ...string) []api.Tag {
	var out []api.Tag
	for i := 0; i < len(kv); i += 2 {
		out = append(out, api.Tag{Key: api.String(kv[i]), Value: api.String(kv[i+1])})
	}
	return out
}

func plain(list []tag) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.Key+"="+t.Value)
	}
	return out
}

func TestMergeRemove(t *testing.T) {
	have := []tag{{"a", "1"}, {"b", "2"}}
	tests := map[string]struct {
		got  []tag
		want []string
	}{
		"merge appends new keys":       {merge(have, []tag{{"c", "3"}}), []string{"a=1", "b=2", "c=3"}},
		"merge replaces in place":      {merge(have, []tag{{"a", "9"}}), []string{"a=9", "b=2"}},
		"keys are case-sensitive":      {merge(have, []tag{{"A", "x"}}), []string{"a=1", "b=2", "A=x"}},
		"merge nothing":                {merge(have, nil), []string{"a=1", "b=2"}},
		"remove present and missing":   {remove(have, []string{"a", "zz"}), []string{"b=2"}},
		"remove is case-sensitive":     {remove(have, []string{"B"}), []string{"a=1", "b=2"}},
		"remove everything":            {remove(have, []string{"a", "b"}), nil},
		"merge leaves the input alone": {have, []string{"a=1", "b=2"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := plain(tc.got); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFromAPI(t *testing.T) {
	tests := map[string]struct {
		in      []api.Tag
		wantErr bool
	}{
		"ok":                {apiTags("team", "frogs", "env", ""), false},
		"reserved":          {apiTags("aws:owner", "x"), true},
		"reserved any case": {apiTags("AWS:owner", "x"), true},
		"aws without colon": {apiTags("awsome", "x"), false},
		"duplicate":         {apiTags("a", "1", "a", "2"), true},
		"missing key":       {[]api.Tag{{Value: api.String("v")}}, true},
		"nil value is ok":   {[]api.Tag{{Key: api.String("k")}}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := fromAPI(tc.in)
			var inv *api.InvalidRequestException
			if tc.wantErr != errors.As(err, &inv) || (!tc.wantErr && err != nil) {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

const fleetARN = "arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1"

// newService returns a Service over a fresh store where fleet-1 exists.
func newService(t *testing.T) (*Service, store.Store) {
	st := openStore(t)
	s := New(st)
	s.RegisterResource("fleet", func(_ context.Context, _ store.Tx, id string) (bool, error) {
		return id == "fleet-1", nil
	})
	s.RegisterResource("build", func(context.Context, store.Tx, string) (bool, error) {
		return false, errors.New("disk on fire")
	})
	return s, st
}

func list(t *testing.T, s *Service, resourceARN string) []string {
	t.Helper()
	out, err := s.ListTagsForResource(t.Context(), &api.ListTagsForResourceRequest{ResourceARN: api.String(resourceARN)})
	if err != nil {
		t.Fatalf("ListTagsForResource: %v", err)
	}
	if out.Tags == nil {
		t.Fatal("Tags is nil, want a list")
	}
	var got []string
	for _, tg := range out.Tags {
		got = append(got, *tg.Key+"="+*tg.Value)
	}
	return got
}

func TestTagUntagList(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	if got := list(t, s, fleetARN); len(got) != 0 {
		t.Fatalf("new resource has tags %v", got)
	}
	if _, err := s.TagResource(ctx, &api.TagResourceRequest{ResourceARN: api.String(fleetARN), Tags: apiTags("team", "frogs", "env", "dev")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TagResource(ctx, &api.TagResourceRequest{ResourceARN: api.String(fleetARN), Tags: apiTags("env", "prod", "Env", "x")}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(t, s, fleetARN), []string{"team=frogs", "env=prod", "Env=x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tags = %v, want %v", got, want)
	}
	// The same resource named with another Region and account.
	other := "arn:aws:gamelift:eu-west-1:999999999999:Fleet/fleet-1"
	if got := list(t, s, other); len(got) != 3 {
		t.Fatalf("tags through another Region's ARN = %v", got)
	}
	if _, err := s.UntagResource(ctx, &api.UntagResourceRequest{ResourceARN: api.String(fleetARN), TagKeys: []string{"team", "missing"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(t, s, fleetARN), []string{"env=prod", "Env=x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after untag = %v, want %v", got, want)
	}
	if _, err := s.UntagResource(ctx, &api.UntagResourceRequest{ResourceARN: api.String(fleetARN), TagKeys: []string{"env", "Env"}}); err != nil {
		t.Fatal(err)
	}
	if got := list(t, s, fleetARN); len(got) != 0 {
		t.Fatalf("after untagging all = %v", got)
	}
}

func TestErrors(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	many := make([]string, 0, 2*(MaxTags+1))
	for i := range MaxTags + 1 {
		many = append(many, fmt.Sprintf("k%d", i), "v")
	}
	if _, err := s.TagResource(ctx, &api.TagResourceRequest{ResourceARN: api.String(fleetARN), Tags: apiTags(many[:2*MaxTags]...)}); err != nil {
		t.Fatalf("%d tags: %v", MaxTags, err)
	}
	tag := func(resourceARN string, tags ...string) error {
		_, err := s.TagResource(ctx, &api.TagResourceRequest{ResourceARN: api.String(resourceARN), Tags: apiTags(tags...)})
		return err
	}
	untag := func(resourceARN string, keys ...string) error {
		_, err := s.UntagResource(ctx, &api.UntagResourceRequest{ResourceARN: api.String(resourceARN), TagKeys: keys})
		return err
	}
	listErr := func(resourceARN string) error {
		_, err := s.ListTagsForResource(ctx, &api.ListTagsForResourceRequest{ResourceARN: api.String(resourceARN)})
		return err
	}
	var (
		invalid  *api.InvalidRequestException
		notFound *api.NotFoundException
		failed   *api.TaggingFailedException
	)
	tests := map[string]struct {
		err  error
		want any
	}{
		"51st tag":                {tag(fleetARN, "k50", "v"), &failed},
		"replacing at the limit":  {tag(fleetARN, "k0", "new"), nil},
		"reserved key":            {tag(fleetARN, "aws:x", "v"), &invalid},
		"untag reserved key":      {untag(fleetARN, "aws:x"), &invalid},
		"malformed ARN":           {tag("fleet-1", "a", "b"), &invalid},
		"not a GameLift ARN":      {tag("arn:aws:s3:::bucket/key", "a", "b"), &invalid},
		"unknown type":            {listErr("arn:aws:gamelift:us-west-2::bucket/b1"), &invalid},
		"unregistered type":       {listErr("arn:aws:gamelift:us-west-2::alias/alias-1"), &notFound},
		"missing resource":        {tag("arn:aws:gamelift:us-west-2::fleet/fleet-2", "a", "b"), &notFound},
		"untag missing resource":  {untag("arn:aws:gamelift:us-west-2::fleet/fleet-2", "a"), &notFound},
		"list missing resource":   {listErr("arn:aws:gamelift:us-west-2::fleet/fleet-2"), &notFound},
		"exists fails":            {listErr("arn:aws:gamelift:us-west-2::build/build-1"), "disk on fire"},
		"duplicate keys in input": {tag(fleetARN, "a", "1", "a", "2"), &invalid},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			switch want := tc.want.(type) {
			case nil:
				if tc.err != nil {
					t.Fatalf("err = %v, want nil", tc.err)
				}
			case string:
				if tc.err == nil || tc.err.Error() != want {
					t.Fatalf("err = %v, want %q", tc.err, want)
				}
			default:
				if !errors.As(tc.err, want) {
					t.Fatalf("err = %T %v, want %T", tc.err, tc.err, want)
				}
			}
		})
	}
	if got := list(t, s, fleetARN); len(got) != MaxTags || got[0] != "k0=new" {
		t.Errorf("after the refusals: %d tags, first %q", len(got), got[0])
	}
}

func TestTxHelpers(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	err := st.Update(ctx, func(tx store.Tx) error {
		if err := Set(ctx, tx, fleetARN, apiTags("a", "1", "b", "2")); err != nil {
			return err
		}
		if err := Set(ctx, tx, fleetARN, apiTags("c", "3")); err != nil { // replaces
			return err
		}
		got, err := Get(ctx, tx, "arn:aws:gamelift:other-region::fleet/fleet-1")
		if err != nil {
			return err
		}
		if len(got) != 1 || *got[0].Key != "c" {
			return fmt.Errorf("Get = %v", got)
		}
		if err := DeleteAll(ctx, tx, fleetARN); err != nil {
			return err
		}
		if err := DeleteAll(ctx, tx, fleetARN); err != nil { // nothing left: fine
			return err
		}
		got, err = Get(ctx, tx, fleetARN)
		if err != nil || got != nil {
			return fmt.Errorf("after DeleteAll: %v, %v", got, err)
		}
		return Set(ctx, tx, fleetARN, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	var invalid *api.InvalidRequestException
	tooMany := make([]string, 0, 2*(MaxTags+1))
	for i := range MaxTags + 1 {
		tooMany = append(tooMany, fmt.Sprintf("k%d", i), "v")
	}
	tests := map[string]func(tx store.Tx) error{
		"too many":      func(tx store.Tx) error { return Set(ctx, tx, fleetARN, apiTags(tooMany...)) },
		"reserved":      func(tx store.Tx) error { return Set(ctx, tx, fleetARN, apiTags("aws:a", "b")) },
		"malformed Set": func(tx store.Tx) error { return Set(ctx, tx, "nope", nil) },
		"malformed Get": func(tx store.Tx) error { _, err := Get(ctx, tx, "nope"); return err },
		"malformed Del": func(tx store.Tx) error { return DeleteAll(ctx, tx, "nope") },
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			if err := st.Update(ctx, fn); !errors.As(err, &invalid) {
				t.Errorf("err = %v, want InvalidRequestException", err)
			}
		})
	}
}
