package fleets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// fleetRec is a Fleet record: the shared hosting.Fleet (what other packages
// read) plus fleets' own bookkeeping, stored beside it in the same JSON
// document (readers of hosting.Fleet ignore it).
type fleetRec struct {
	hosting.Fleet
	Own fleetOwn `json:"fleets,omitempty"`
}

// fleetOwn is fleets' private part of a Fleet record.
type fleetOwn struct {
	// Since is when each location entered its current status; for the
	// creation statuses (DOWNLOADING to ACTIVATING), when creation began.
	Since map[string]time.Time `json:"since,omitempty"`
	// ActivatingSince is when each location being created entered
	// ACTIVATING.
	ActivatingSince map[string]time.Time `json:"activatingSince,omitempty"`
	// Failures counts, per location being created, the server processes
	// that ended before any of the location's became ready.
	Failures map[string]creationFailures `json:"failures,omitempty"`
	// NoCapacity holds, per location that could not get an instance for
	// want of a host, why (so the event is recorded once per episode).
	NoCapacity map[string]string `json:"noCapacity,omitempty"`
}

// creationFailures are the server processes of a location being created
// that ended before any became ready.
type creationFailures struct {
	Count int `json:"count"`
	// Last says how the last one ended (with the end of its output), and
	// Process names it when its output was kept.
	Last    string `json:"last,omitempty"`
	Process string `json:"process,omitempty"`
}

// zeroTime is the zero time (a token without expiry).
var zeroTime time.Time

// never is the Rank of a record without a deadline.
const never = math.MaxInt64

func ms(t time.Time) int64 { return t.UnixMilli() }

// --- fleets ---

// fleetIDOf returns the fleet ID of a FleetId that may be an ARN.
func fleetIDOf(idOrARN string) string {
	if strings.HasPrefix(idOrARN, "arn:") {
		if i := strings.LastIndex(idOrARN, "/"); i >= 0 {
			return idOrARN[i+1:]
		}
	}
	return idOrARN
}

func getFleet(ctx context.Context, tx store.Tx, id string) (*fleetRec, error) {
	f := new(fleetRec)
	if _, err := store.GetJSON(ctx, tx, hosting.KindFleet, id, f); err != nil {
		return nil, err
	}
	return f, nil
}

// findFleet reads a fleet for an API call: NotFoundException when there is
// none. TERMINATED fleets are found only when live is false.
func findFleet(ctx context.Context, tx store.Tx, idOrARN string, live bool) (*fleetRec, error) {
	id := fleetIDOf(idOrARN)
	f, err := getFleet(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && live && f.status() == api.FleetStatusTerminated) {
		return nil, api.NewNotFoundException("fleet %s does not exist", id)
	}
	return f, err
}

func putFleet(ctx context.Context, tx store.Tx, f *fleetRec) error {
	rec := store.Record{Kind: hosting.KindFleet, ID: f.id(), Key: string(f.status())}
	return store.PutJSON(ctx, tx, rec, f)
}

func (f *fleetRec) id() string                   { return api.ToString(f.Attributes.FleetId) }
func (f *fleetRec) status() api.FleetStatus      { return f.Attributes.Status }
func (f *fleetRec) anywhere() bool               { return f.Attributes.ComputeType == api.ComputeTypeAnywhere }
func (f *fleetRec) arn() string                  { return api.ToString(f.Attributes.FleetArn) }
func (f *fleetRec) home() *hosting.FleetLocation { return f.location(f.HomeLocation) }

// location returns the fleet's location called name ("" = home), or nil.
func (f *fleetRec) location(name string) *hosting.FleetLocation {
	if name == "" {
		name = f.HomeLocation
	}
	for i := range f.Locations {
		if f.Locations[i].Location == name {
			return &f.Locations[i]
		}
	}
	return nil
}

// liveLocation returns the location called name ("" = home) for an API
// call: InvalidRequestException when the fleet has no such location (or it
// was deleted).
func (f *fleetRec) liveLocation(name string) (*hosting.FleetLocation, error) {
	loc := f.location(name)
	if loc == nil || loc.Status == api.FleetStatusTerminated {
		return nil, api.NewInvalidRequestException("fleet %s has no location %s", f.id(), name)
	}
	return loc, nil
}

// --- fleet events ---

// addEvent records a fleet event.
func (s *Service) addEvent(ctx context.Context, tx store.Tx, fleetID string, code api.EventCode, now time.Time, format string, a ...any) error {
	return putEvent(ctx, tx, s.newEvent(fleetID, code, now, fmt.Sprintf(format, a...)))
}

// newEvent returns a new fleet event, not yet stored.
func (s *Service) newEvent(fleetID string, code api.EventCode, now time.Time, msg string) hosting.FleetEvent {
	return hosting.FleetEvent{Event: api.Event{EventId: api.String(s.cfg.NewID()), ResourceId: api.String(fleetID),
		EventCode: code, Message: api.String(msg), EventTime: api.Time(now)}}
}

// putEvent stores a fleet event.
func putEvent(ctx context.Context, tx store.Tx, ev hosting.FleetEvent) error {
	fleetID := api.ToString(ev.Event.ResourceId)
	return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindFleetEvent, ID: api.ToString(ev.Event.EventId),
		Parent: fleetID, Rank: ms(ev.Event.EventTime.Time)}, ev)
}

// --- computes ---

func computeID(fleetID, name string) string { return fleetID + "/" + name }

func getCompute(ctx context.Context, tx store.Tx, fleetID, name string) (*hosting.Compute, error) {
	c := new(hosting.Compute)
	if _, err := store.GetJSON(ctx, tx, hosting.KindCompute, computeID(fleetID, name), c); err != nil {
		return nil, err
	}
	return c, nil
}

func putCompute(ctx context.Context, tx store.Tx, c *hosting.Compute) error {
	rec := store.Record{Kind: hosting.KindCompute, ID: computeID(c.FleetID, c.ComputeName), Parent: c.FleetID, Key: c.Location}
	return store.PutJSON(ctx, tx, rec, c)
}

// fleetComputes returns every compute of a fleet (of one location when loc
// is not "").
func fleetComputes(ctx context.Context, tx store.Tx, fleetID, loc string) ([]*hosting.Compute, error) {
	q := store.Query{Kind: hosting.KindCompute, Parent: fleetID, HasParent: true, Key: loc, HasKey: loc != ""}
	var out []*hosting.Compute
	err := store.Each(ctx, tx, q, func(r store.Record) error {
		c := new(hosting.Compute)
		if err := store.Decode(r, c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// deleteCompute removes a compute and its auth tokens.
func deleteCompute(ctx context.Context, tx store.Tx, fleetID, name string) error {
	if err := tx.Delete(ctx, hosting.KindCompute, computeID(fleetID, name)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return deleteTokens(ctx, tx, fleetID, name)
}

// --- auth tokens ---

// tokenHash is the record ID of a token: its SHA-256, hex.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// putToken stores a token's hash for a compute; a zero expires means the
// token lasts as long as the compute.
func putToken(ctx context.Context, tx store.Tx, token, fleetID, name string, expires time.Time) error {
	rank := int64(never)
	if !expires.IsZero() {
		rank = ms(expires)
	}
	t := hosting.ComputeAuthToken{FleetID: fleetID, ComputeName: name, Expires: expires}
	return store.PutJSON(ctx, tx, store.Record{Kind: hosting.KindComputeAuthToken, ID: tokenHash(token),
		Parent: computeID(fleetID, name), Rank: rank}, t)
}

// --- custom locations ---

// locationRec is a custom location (CreateLocation). Record: Kind Location,
// ID = location name.
type locationRec struct {
	Location     api.LocationModel `json:"location"`
	CreationTime time.Time         `json:"creationTime"`
}

func getLocation(ctx context.Context, tx store.Tx, name string) (*locationRec, error) {
	l := new(locationRec)
	if _, err := store.GetJSON(ctx, tx, hosting.KindLocation, name, l); err != nil {
		return nil, err
	}
	return l, nil
}

// --- scaling policies ---

// policyRec is a scaling policy. Record: Kind ScalingPolicy, ID = fleet ID +
// "/" + name, Parent = fleet ID.
type policyRec struct {
	Policy api.ScalingPolicy `json:"policy"`
	// State is the policy's evaluation state in each location.
	State map[string]PolicyState `json:"state,omitempty"`
}

func policyID(fleetID, name string) string { return fleetID + "/" + name }

func putPolicy(ctx context.Context, tx store.Tx, p *policyRec) error {
	fid := api.ToString(p.Policy.FleetId)
	rec := store.Record{Kind: hosting.KindScalingPolicy, ID: policyID(fid, api.ToString(p.Policy.Name)), Parent: fid}
	return store.PutJSON(ctx, tx, rec, p)
}

func fleetPolicies(ctx context.Context, tx store.Tx, fleetID string) ([]*policyRec, error) {
	q := store.Query{Kind: hosting.KindScalingPolicy, Parent: fleetID, HasParent: true}
	var out []*policyRec
	err := store.Each(ctx, tx, q, func(r store.Record) error {
		p := new(policyRec)
		if err := store.Decode(r, p); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// --- paging ---

// pageSize returns a request's page size (default def, at most max).
func pageSize(limit *int32, def, max int) int {
	n := int(api.ToInt32(limit))
	if n <= 0 {
		return def
	}
	return min(n, max)
}
