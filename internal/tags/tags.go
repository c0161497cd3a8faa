// Package tags keeps the tags of every taggable GameLift resource and serves
// the tagging operations (TagResource, UntagResource, ListTagsForResource)
// for all of them.
//
// Tags live in one record per resource: Kind "Tags", ID = the resource part
// of its ARN ("<type>/<id>", the type lower-cased). Region and account are
// left out of the ID on purpose: Hoist serves one account in one Region, and
// arn.NameOrARN accepts an ARN whatever Region and account it carries, so an
// ARN naming the same resource finds the same tags.
//
// Domain packages call Set, Get and DeleteAll inside their own transactions
// (creating a resource with tags, deleting it). The tagging operations go
// through a Service, to which each domain registers its resource type with a
// function telling whether a resource exists.
//
// Rules (GameLift's documented tagging limits; where GameLift leaves the
// error open, Hoist's choice):
//   - at most MaxTags (50) tags per resource: TagResource past it answers
//     TaggingFailedException (the modeled "tag limit exceeded" error); a
//     create operation given more answers InvalidRequestException;
//   - keys are case-sensitive; tagging an existing key replaces its value;
//   - keys starting with "aws:" (any case) are reserved: InvalidRequestException
//     (also for UntagResource);
//   - the same key twice in one request: InvalidRequestException;
//   - ListTagsForResource lists tags in the order they were first added.
package tags

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/arn"
	"github.com/hoistgg/hoist/internal/store"
)

// Kind is the store kind of tag records.
const Kind store.Kind = "Tags"

// MaxTags is the most tags one resource may have.
const MaxTags = 50

// record is the stored form of one resource's tags.
type record struct {
	// ARN is the resource's ARN as last written.
	ARN  string `json:"arn"`
	Tags []tag  `json:"tags"`
}

type tag struct {
	Key   string `json:"k"`
	Value string `json:"v"`
}

// recordID returns the tag record ID of a resource ARN.
func recordID(resourceARN string) (string, error) {
	a, err := arn.Parse(resourceARN)
	if err != nil {
		return "", api.NewInvalidRequestException("ResourceARN %q is not a valid ARN (arn:aws:gamelift:<region>:<account>:<type>/<id>)", resourceARN)
	}
	return strings.ToLower(a.ResourceType) + "/" + a.ResourceID, nil
}

// Set replaces the tags of the resource resourceARN with tags, in tx. No
// tags removes the record. Invalid tags (reserved or repeated keys, more
// than MaxTags) answer *api.InvalidRequestException.
func Set(ctx context.Context, tx store.Tx, resourceARN string, tags []api.Tag) error {
	id, err := recordID(resourceARN)
	if err != nil {
		return err
	}
	list, err := fromAPI(tags)
	if err != nil {
		return err
	}
	if len(list) > MaxTags {
		return api.NewInvalidRequestException("Tags has %d tags; a resource may have at most %d", len(list), MaxTags)
	}
	return write(ctx, tx, id, resourceARN, list)
}

// Get returns the tags of the resource resourceARN (nil when it has none).
func Get(ctx context.Context, tx store.Tx, resourceARN string) ([]api.Tag, error) {
	id, err := recordID(resourceARN)
	if err != nil {
		return nil, err
	}
	list, err := read(ctx, tx, id)
	return toAPI(list), err
}

// DeleteAll forgets every tag of the resource resourceARN (a deleted
// resource). A resource without tags is not an error.
func DeleteAll(ctx context.Context, tx store.Tx, resourceARN string) error {
	id, err := recordID(resourceARN)
	if err != nil {
		return err
	}
	return write(ctx, tx, id, resourceARN, nil)
}

// read returns the stored tags of record id.
func read(ctx context.Context, tx store.Tx, id string) ([]tag, error) {
	rec, err := tx.Get(ctx, Kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(rec.Data, &r); err != nil {
		return nil, err
	}
	return r.Tags, nil
}

// write stores list as record id's tags; an empty list deletes the record.
func write(ctx context.Context, tx store.Tx, id, resourceARN string, list []tag) error {
	if len(list) == 0 {
		err := tx.Delete(ctx, Kind, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	data, err := json.Marshal(record{ARN: resourceARN, Tags: list})
	if err != nil {
		return err
	}
	return tx.Put(ctx, store.Record{Kind: Kind, ID: id, Data: data})
}

// fromAPI checks tags given in a request and converts them.
func fromAPI(tags []api.Tag) ([]tag, error) {
	list := make([]tag, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		if t.Key == nil {
			return nil, api.NewInvalidRequestException("Tags[%d].Key is missing", i)
		}
		if err := checkKey(*t.Key, "Tags"); err != nil {
			return nil, err
		}
		if seen[*t.Key] {
			return nil, api.NewInvalidRequestException("Tags has the key %q more than once", *t.Key)
		}
		seen[*t.Key] = true
		list = append(list, tag{Key: *t.Key, Value: api.ToString(t.Value)})
	}
	return list, nil
}

// checkKey refuses the reserved "aws:" prefix.
func checkKey(key, field string) error {
	if len(key) >= 4 && strings.EqualFold(key[:4], "aws:") {
		return api.NewInvalidRequestException("%s: the tag key %q uses the reserved prefix \"aws:\"", field, key)
	}
	return nil
}

func toAPI(list []tag) []api.Tag {
	if len(list) == 0 {
		return nil
	}
	out := make([]api.Tag, len(list))
	for i, t := range list {
		out[i] = api.Tag{Key: api.String(t.Key), Value: api.String(t.Value)}
	}
	return out
}

// merge adds (or replaces the values of) add to have, keeping the order in
// which keys were first added.
func merge(have, add []tag) []tag {
	out := append([]tag(nil), have...)
	for _, a := range add {
		i := indexOf(out, a.Key)
		if i >= 0 {
			out[i].Value = a.Value
		} else {
			out = append(out, a)
		}
	}
	return out
}

// remove drops the tags with the given keys (keys not present are ignored).
func remove(have []tag, keys []string) []tag {
	out := make([]tag, 0, len(have))
	for _, t := range have {
		drop := false
		for _, k := range keys {
			if t.Key == k {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, t)
		}
	}
	return out
}

func indexOf(list []tag, key string) int {
	for i, t := range list {
		if t.Key == key {
			return i
		}
	}
	return -1
}
