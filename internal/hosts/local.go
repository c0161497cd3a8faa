package hosts

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
)

// LocalHost describes Hoist's own machine as a host: the local agent
// (`hoist agent --local`, which `hoist serve` starts and which outlives it,
// so a restart of Hoist ends no game) runs the instances of every location
// no pool host is enrolled in.
type LocalHost struct {
	// HostID names it (stable across restarts of Hoist); Secret is the
	// credential the local agent connects with ("" or not matching the
	// stored hash: a new one is made).
	HostID, Secret string
	// Location is informational (a Local host serves any location no other
	// host serves); Address is the IP address of its instances.
	Location, Address string
	// InstancesDir is where the local agent keeps its instances.
	InstancesDir string
}

// localCapacity is how many instances of any type the local host runs:
// Hoist's own machine is bounded by fleets' instance limits, not a pool's.
const localCapacity = maxCapacity

// EnsureLocalHost records Hoist's own machine as a Local host (or updates
// its address and directory), keeping its status, generation and
// credential, and returns the credential the local agent must use: lh's
// Secret when it is the recorded one, else a new one.
func (s *Service) EnsureLocalHost(ctx context.Context, lh LocalHost) (string, error) {
	if lh.HostID == "" {
		return "", errors.New("hosts: the local host needs an ID")
	}
	secret := lh.Secret
	now := s.now()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		h, err := getHost(ctx, tx, lh.HostID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			h = &Host{HostID: lh.HostID, Pool: "local", Status: StatusActive, EnrolledAt: now, LastSeen: now}
		case err != nil:
			return err
		case !h.Local:
			return errors.New("hosts: host " + lh.HostID + " is a pool host, not this Hoist's own machine")
		}
		h.Local, h.Location, h.Address, h.InstancesDir = true, lh.Location, lh.Address, lh.InstancesDir
		h.Capacity = map[string]int{"*": localCapacity}
		if secret == "" || subtle.ConstantTimeCompare([]byte(hostproto.SecretHash(secret)), []byte(h.SecretHash)) != 1 {
			secret = hostproto.NewHostSecret()
			h.SecretHash = hostproto.SecretHash(secret)
		}
		return putHost(ctx, tx, h)
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// RetireLocalHost tells the local agent, when it is connected to this
// replica, to end every instance it runs and exit (hostproto.ActionRetire),
// and returns once its connection closed (its processes are gone) or ctx
// ends: what `hoist serve` does when it is stopped with SIGINT. Hoist
// keeps serving meanwhile, so the processes are sent TerminateProcess.
func (s *Service) RetireLocalHost(ctx context.Context, hostID, reason string) error {
	s.mu.Lock()
	hc := s.conns[hostID]
	s.mu.Unlock()
	if hc == nil {
		return errNotConnected
	}
	if err := s.msgr.SendToHost(ctx, hostID, hostproto.ActionRetire, hostproto.Retire{Reason: reason}); err != nil {
		return err
	}
	select {
	case <-hc.peer.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
