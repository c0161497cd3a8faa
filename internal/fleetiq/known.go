package fleetiq

import (
	"context"
	"sync"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// knownInstances remembers the instance record of each game server this
// replica registered, claimed or updated, so that UpdateGameServer can read
// a game server and its instance in one round trip (store.GetRefs) where it
// would otherwise read the game server first to learn its instance. A game
// server keeps its instance while it is registered; one deregistered (on
// another replica) and registered again on another instance leaves an
// entry that no longer holds, which the update sees in the game server it
// read, and then reads the right instance as it would without the entry.
// At most maxKnownInstances entries; a full map starts over.
type knownInstances struct {
	mu sync.Mutex
	m  map[string]string // game server ID -> instanceID(group, instance)
}

// maxKnownInstances bounds knownInstances (an entry is two short strings:
// a few MB at most).
const maxKnownInstances = 1 << 16

// note remembers g's instance.
func (k *knownInstances) note(g *serverRec) {
	if g == nil {
		return
	}
	inst := instanceID(g.Group, g.Instance)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[g.ID] == inst {
		return
	}
	if k.m == nil || len(k.m) >= maxKnownInstances {
		k.m = make(map[string]string)
	}
	k.m[g.ID] = inst
}

// forget drops game server id.
func (k *knownInstances) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, id)
}

// lookup returns the instance record ID remembered for game server id.
func (k *knownInstances) lookup(id string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	inst, ok := k.m[id]
	return inst, ok
}

// readForUpdate reads the game server an UpdateGameServer names, as
// findServer does, and, for an update to AVAILABLE (which moves a
// UTILIZED game server back to its instance's available ones), its
// instance as readWithInstance does.
func (s *Service) readForUpdate(ctx context.Context, tx store.Tx, in *api.UpdateGameServerInput) (g *serverRec, inst *instanceRec, err error) {
	group, id := api.ToString(in.GameServerGroupName), api.ToString(in.GameServerId)
	if in.UtilizationStatus != api.GameServerUtilizationStatusAvailable {
		g, err = findServer(ctx, tx, group, id)
		s.known.note(g)
		return g, nil, err
	}
	return s.readWithInstance(ctx, tx, group, id)
}

// readWithInstance reads game server id of the group groupNameOrARN
// names, as findServer does, and, when the replica knows its instance,
// that instance in the same round trip, holding both in that order (the
// order in which a read of the game server, then of its instance, holds
// them). inst is nil when it was not read, does not exist, or is not the
// game server's (the caller then reads it).
func (s *Service) readWithInstance(ctx context.Context, tx store.Tx, groupNameOrARN, id string) (g *serverRec, inst *instanceRec, err error) {
	instID, known := s.known.lookup(id)
	if !known {
		g, err = findServer(ctx, tx, groupNameOrARN, id)
		s.known.note(g)
		return g, nil, err
	}
	got, err := store.GetRefs(ctx, tx, []store.Ref{{Kind: kindServer, ID: id}, {Kind: kindInstance, ID: instID}})
	if err != nil {
		return nil, nil, err
	}
	if g, err = gotAs[serverRec](got[0]); err != nil {
		return nil, nil, err
	}
	if err = serverIn(g, groupNameOrARN, id); err != nil {
		return nil, nil, err
	}
	s.known.note(g)
	if instanceID(g.Group, g.Instance) != instID {
		return g, nil, nil
	}
	inst, err = gotAs[instanceRec](got[1])
	return g, inst, err
}
