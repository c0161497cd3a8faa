package fleetiq

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds (see the package documentation for their columns).
const (
	kindGroup    store.Kind = "GameServerGroup"
	kindServer   store.Kind = "GameServer"
	kindInstance store.Kind = "GameServerInstance"
	kindHealth   store.Kind = "GameServerHealth"
)

// Keys of game server records besides "A/<instance>", and of health records.
const (
	keyClaimed  = "C"
	keyUtilized = "U"
	keyDue      = "due"
)

// groupRec is a game server group as stored: every input of
// CreateGameServerGroup, even those Hoist has no use for.
type groupRec struct {
	Name string `json:"name"`
	// Status is the stored status; it advances with time (see progress).
	Status api.GameServerGroupStatus `json:"status"`
	// Since is when the group entered Status (epoch ms).
	Since   int64 `json:"since"`
	Created int64 `json:"created"`
	// Updated is when an operation last changed the group (epoch ms).
	Updated             int64                                 `json:"updated"`
	RoleArn             string                                `json:"roleArn"`
	Balancing           api.BalancingStrategy                 `json:"balancing"`
	Protection          api.GameServerProtectionPolicy        `json:"protection"`
	InstanceDefinitions []api.InstanceDefinition              `json:"instanceDefinitions"`
	LaunchTemplate      *api.LaunchTemplateSpecification      `json:"launchTemplate,omitempty"`
	AutoScalingPolicy   *api.GameServerGroupAutoScalingPolicy `json:"autoScalingPolicy,omitempty"`
	MinSize             int32                                 `json:"minSize"`
	MaxSize             int32                                 `json:"maxSize"`
	VpcSubnets          []string                              `json:"vpcSubnets,omitempty"`
	Suspended           []api.GameServerGroupAction           `json:"suspended,omitempty"`
	DeleteOption        api.GameServerGroupDeleteOption       `json:"deleteOption,omitempty"`
	AutoScalingGroupArn string                                `json:"asgArn"`
}

// serverRec is a game server as stored. Claimed and Utilized never both
// hold; a claim may have ended without the record knowing (see claimActive).
type serverRec struct {
	ID         string  `json:"id"`
	Group      string  `json:"g"`
	Instance   string  `json:"i"`
	Conn       *string `json:"c,omitempty"`
	Data       *string `json:"d,omitempty"`
	Utilized   bool    `json:"u,omitempty"`
	Claimed    bool    `json:"cl,omitempty"`
	LastClaim  int64   `json:"lc,omitempty"`
	Registered int64   `json:"r"`
	LastHealth int64   `json:"h,omitempty"`
}

// claimActive reports whether g holds a claim at now.
func (g *serverRec) claimActive(now time.Time) bool {
	return g.Claimed && ms(now) < g.LastClaim+ClaimHold.Milliseconds()
}

// settle ends a claim that has run out; it reports whether it did.
func (g *serverRec) settle(now time.Time) bool {
	if g.Claimed && !g.claimActive(now) {
		g.Claimed = false
		return true
	}
	return false
}

// busy reports whether g counts as busy (claimed or utilized) on its
// instance, as stored.
func (g *serverRec) busy() bool { return g.Utilized || g.Claimed }

// availableKey is the Key of the AVAILABLE, unclaimed game servers of an
// instance.
func availableKey(instanceID string) string { return "A/" + instanceID }

func (g *serverRec) record() (store.Record, error) {
	rec := store.Record{Kind: kindServer, ID: g.ID, Parent: g.Group}
	switch {
	case g.Utilized:
		rec.Key = keyUtilized
	case g.Claimed:
		rec.Key, rec.Rank = keyClaimed, g.LastClaim+ClaimHold.Milliseconds()
	default:
		rec.Key, rec.Rank = availableKey(g.Instance), g.Registered
	}
	rec.Data = g.appendJSON(make([]byte, 0, 160))
	return rec, nil
}

// instanceRec is an instance of a group: the instance ID its game servers
// registered with, its status and counts of its game servers.
type instanceRec struct {
	Group  string                       `json:"g"`
	ID     string                       `json:"i"`
	Status api.GameServerInstanceStatus `json:"s"`
	// Available counts AVAILABLE unclaimed game servers, Busy claimed or
	// utilized ones (as stored: an ended claim counts until released).
	Available int `json:"a"`
	Busy      int `json:"b"`
}

func instanceID(group, id string) string { return group + "/" + id }

// instanceKey is an instance's Key: its status and whether it has an
// available game server.
func instanceKey(status api.GameServerInstanceStatus, hasAvailable bool) string {
	if hasAvailable {
		return string(status) + "/1"
	}
	return string(status) + "/0"
}

// count moves one game server of i from one class (busy or not) to another.
func (i *instanceRec) count(wasBusy, isBusy bool) {
	if wasBusy == isBusy {
		return
	}
	if isBusy {
		i.Available--
		i.Busy++
	} else {
		i.Busy--
		i.Available++
	}
}

func (i *instanceRec) record() (store.Record, error) {
	return store.Record{Kind: kindInstance, ID: instanceID(i.Group, i.ID), Parent: i.Group,
		Key: instanceKey(i.Status, i.Available > 0), Rank: instanceRank(i.Busy), Data: i.appendJSON(make([]byte, 0, 96))}, nil
}

// instanceRank is the Rank of an instance with busy busy game servers:
// minus the count, so that the busiest comes first in Rank ascending order
// (see instanceQuery). An earlier Hoist stored the count itself; the sweep
// rewrites such records (instanceRanksStep).
func instanceRank(busy int) int64 { return -int64(busy) }

// decode unmarshals a record's Data into a new T.
func decode[T any](rec store.Record) (*T, error) {
	v := new(T)
	if d, ok := any(v).(recordDecoder); ok {
		if err := d.decodeJSON(rec.Data); err != nil {
			return nil, err
		}
		return v, nil
	}
	if err := json.Unmarshal(rec.Data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// get reads and decodes the record kind/id; nil (and no error) when missing.
func get[T any](ctx context.Context, tx store.Tx, kind store.Kind, id string) (*T, error) {
	rec, err := tx.Get(ctx, kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decode[T](rec)
}

// gotAs decodes what store.GetRefs read; nil (and no error) when missing.
func gotAs[T any](got store.Got) (*T, error) {
	if !got.Found {
		return nil, nil
	}
	return decode[T](got.Record)
}

func loadGroup(ctx context.Context, tx store.Tx, name string) (*groupRec, error) {
	return get[groupRec](ctx, tx, kindGroup, name)
}

func loadServer(ctx context.Context, tx store.Tx, id string) (*serverRec, error) {
	return get[serverRec](ctx, tx, kindServer, id)
}

func loadInstance(ctx context.Context, tx store.Tx, group, id string) (*instanceRec, error) {
	return get[instanceRec](ctx, tx, kindInstance, instanceID(group, id))
}

// putGroup writes g with the Key and Rank the sweep looks for.
func (s *Service) putGroup(ctx context.Context, tx store.Tx, g *groupRec) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	due := dueAt(g.Status, fromMS(g.Since), s.cfg.Timings.StatusStep, s.cfg.Timings.DeletedRetention)
	return tx.Put(ctx, store.Record{Kind: kindGroup, ID: g.Name, Key: string(g.Status), Rank: ms(due), Data: data})
}

func putServer(ctx context.Context, tx store.Tx, g *serverRec) error {
	rec, err := g.record()
	if err != nil {
		return err
	}
	return tx.Put(ctx, rec)
}

// putInstance writes i, or deletes it once it has no game servers left
// (Hoist knows an instance only through its game servers).
func putInstance(ctx context.Context, tx store.Tx, i *instanceRec) error {
	if i.Available+i.Busy <= 0 {
		return ignoreNotFound(tx.Delete(ctx, kindInstance, instanceID(i.Group, i.ID)))
	}
	rec, err := i.record()
	if err != nil {
		return err
	}
	return tx.Put(ctx, rec)
}

// putHealth sets when game server g is due for health expiry.
func (s *Service) putHealth(ctx context.Context, tx store.Tx, g *serverRec) error {
	if !s.healthOn() {
		return nil
	}
	deadline := fromMS(g.LastHealth).Add(s.cfg.HealthExpiry)
	return tx.Put(ctx, store.Record{Kind: kindHealth, ID: g.ID, Parent: g.Group, Key: keyDue, Rank: ms(deadline), Data: []byte("{}")})
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// defaultLimit is the page size of the list operations when the request
// gives no Limit.
const defaultLimit = 100

func limitOf(l *int32) int {
	if l == nil || *l <= 0 {
		return defaultLimit
	}
	return int(*l)
}

// page lists up to limit records of q that match accepts (nil: all),
// after the NextToken after, with the one pager (paging.Records).
func page(ctx context.Context, tx store.Tx, q store.Query, after string, limit int, match func(store.Record) bool) ([]store.Record, string, error) {
	var keep func(store.Record) (bool, error)
	if match != nil {
		keep = func(r store.Record) (bool, error) { return match(r), nil }
	}
	return paging.Records(ctx, tx, q, after, limit, keep)
}
