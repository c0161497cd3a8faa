package hosts

import (
	"context"
	"errors"
	"time"

	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds of hosts.
const (
	// KindHost: an enrolled host. ID = host ID, Key = its Status, Rank =
	// LastSeen (Unix ms): the liveness loop finds the silent ones with one
	// range read.
	KindHost store.Kind = "Host"
	// KindHostInstance: an instance placed on a pool host. ID = instance
	// ID, Parent = host ID.
	KindHostInstance store.Kind = "HostInstance"
	// KindEnrolmentToken: an enrolment token. ID = the token's ID, Rank =
	// its expiry (Unix ms).
	KindEnrolmentToken store.Kind = "HostEnrolmentToken"
)

// Status is a host's status.
type Status string

// Host statuses.
const (
	// StatusActive: the host takes new instances.
	StatusActive Status = "ACTIVE"
	// StatusDraining: the operator drains it: no new instance; those it
	// runs end as their game sessions end and are replaced elsewhere.
	StatusDraining Status = "DRAINING"
	// StatusLost: it missed its heartbeats; its instances were lost. It
	// is ACTIVE again (DRAINING if it was drained) when its agent
	// reconnects, and is then told to end what it still runs.
	StatusLost Status = "LOST"
)

// Host is an enrolled host.
type Host struct {
	HostID   string `json:"hostId"`
	Pool     string `json:"pool"`
	Location string `json:"location"`
	// Address is the IP address of its instances, game sessions and player
	// sessions; DNSName its own DNS name ("" if none).
	Address string `json:"address"`
	DNSName string `json:"dnsName,omitempty"`
	// Hostname is the machine's name as the agent gave it.
	Hostname string `json:"hostname,omitempty"`
	// Capacity is how many instances of each instance type it runs at
	// once ("*": of any type it does not list).
	Capacity map[string]int `json:"capacity"`
	Status   Status         `json:"status"`
	// Local marks the machine Hoist runs on enrolled as a host: it serves
	// any location no other host is enrolled in.
	Local bool `json:"local,omitempty"`
	// SecretHash is the SHA-256 of its secret (hostproto.SecretHash).
	SecretHash string    `json:"secretHash"`
	EnrolledAt time.Time `json:"enrolledAt"`
	// LastSeen is when it last said anything (Hello, Heartbeat);
	// Interval is the heartbeat interval it was last told.
	LastSeen time.Time     `json:"lastSeen"`
	Interval time.Duration `json:"interval"`
	// ConnectedTo is the replica holding its connection ("" = none),
	// ConnID that connection.
	ConnectedTo string `json:"connectedTo,omitempty"`
	ConnID      string `json:"connId,omitempty"`
	// Generation grows each time it is declared LOST: instances placed in
	// an earlier generation are lost for good.
	Generation int       `json:"generation"`
	LostAt     time.Time `json:"lostAt,omitzero"`
	// Drained: the operator drained it (DrainHost); it is DRAINING again,
	// not ACTIVE, when it comes back after being LOST.
	Drained bool `json:"drained,omitempty"`
	// Reported are the instances it said it runs in its last heartbeat, at
	// ReportedAt.
	Reported   []string  `json:"reported,omitempty"`
	ReportedAt time.Time `json:"reportedAt,omitzero"`
	// InstancesDir is where it keeps its instances.
	InstancesDir string `json:"instancesDir,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
}

// HostInstance is an instance placed on a pool host.
type HostInstance struct {
	InstanceID   string `json:"instanceId"`
	HostID       string `json:"hostId"`
	FleetID      string `json:"fleetId"`
	Location     string `json:"location"`
	InstanceType string `json:"instanceType"`
	// Generation is the host's when the instance was placed.
	Generation int `json:"generation"`
}

// EnrolmentToken is an enrolment token as stored.
type EnrolmentToken struct {
	ID         string    `json:"id"`
	Pool       string    `json:"pool"`
	SecretHash string    `json:"secretHash"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	// MaxHosts is how many hosts may enrol with it (0: any number until
	// it expires); Used how many did.
	MaxHosts int `json:"maxHosts,omitempty"`
	Used     int `json:"used"`
}

func getHost(ctx context.Context, tx store.Tx, id string) (*Host, error) {
	h := new(Host)
	if _, err := store.GetJSON(ctx, tx, KindHost, id, h); err != nil {
		return nil, err
	}
	return h, nil
}

func putHost(ctx context.Context, tx store.Tx, h *Host) error {
	return store.PutJSON(ctx, tx, store.Record{Kind: KindHost, ID: h.HostID, Key: string(h.Status),
		Rank: h.LastSeen.UnixMilli()}, h)
}

// allHosts reads every host.
func allHosts(ctx context.Context, tx store.Tx) ([]*Host, error) {
	var out []*Host
	err := store.Each(ctx, tx, store.Query{Kind: KindHost}, func(r store.Record) error {
		h := new(Host)
		if err := store.Decode(r, h); err != nil {
			return err
		}
		out = append(out, h)
		return nil
	})
	return out, err
}

func getHostInstance(ctx context.Context, tx store.Tx, id string) (*HostInstance, error) {
	hi := new(HostInstance)
	if _, err := store.GetJSON(ctx, tx, KindHostInstance, id, hi); err != nil {
		return nil, err
	}
	return hi, nil
}

func putHostInstance(ctx context.Context, tx store.Tx, hi *HostInstance) error {
	return store.PutJSON(ctx, tx, store.Record{Kind: KindHostInstance, ID: hi.InstanceID, Parent: hi.HostID}, hi)
}

// hostInstances reads the instances placed on a host.
func hostInstances(ctx context.Context, tx store.Tx, hostID string) ([]*HostInstance, error) {
	var out []*HostInstance
	q := store.Query{Kind: KindHostInstance, Parent: hostID, HasParent: true}
	err := store.Each(ctx, tx, q, func(r store.Record) error {
		hi := new(HostInstance)
		if err := store.Decode(r, hi); err != nil {
			return err
		}
		out = append(out, hi)
		return nil
	})
	return out, err
}

// getCompute reads an instance's compute record (fleets owns it; nil when
// there is none).
func getCompute(ctx context.Context, tx store.Tx, fleetID, instanceID string) (*hosting.Compute, error) {
	c := new(hosting.Compute)
	_, err := store.GetJSON(ctx, tx, hosting.KindCompute, fleetID+"/"+instanceID, c)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return c, err
}

// liveInstance returns the compute of a host's instance when it still
// counts on the host: placed in the host's current generation, and its
// compute record still names the host (nil otherwise).
func liveInstance(ctx context.Context, tx store.Tx, h *Host, hi *HostInstance) (*hosting.Compute, error) {
	if hi.Generation != h.Generation {
		return nil, nil
	}
	c, err := getCompute(ctx, tx, hi.FleetID, hi.InstanceID)
	if err != nil || c == nil || c.Host != h.HostID {
		return nil, err
	}
	return c, nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
