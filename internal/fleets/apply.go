package fleets

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// effects are the side effects a reconciler transaction decided on; they
// run only after it commits (a store may run a transaction function more
// than once).
type effects struct {
	starts []launch
	stops  []stopReq
	// exited are processes of lost instances, to report to sessions;
	// interrupted those of instances lost with their host.
	exited      []string
	interrupted []string
	// removeDirs are directories of purged fleets.
	removeDirs []string
	// activated are locations whose instance became ACTIVE.
	activated []string
	fleetID   string
}

// launch is an instance the reconciler recorded and the provider must start.
type launch struct {
	ref   InstanceRef
	token string
	fleet hosting.Fleet
	own   fleetOwn
	comp  hosting.Compute
	// hostDNS is the DNS name of its pool host ("" if none).
	hostDNS string
}

// applyPlan writes a plan's decisions in tx and collects its side effects.
func (s *Service) applyPlan(ctx context.Context, tx store.Tx, f *fleetRec, p plan, fx *effects) error {
	fx.fleetID = f.id()
	if p.Purge {
		return s.purgeFleet(ctx, tx, f, fx)
	}
	now := s.now()
	changed, full, err := s.recordLaunches(ctx, tx, f, p.Launch, fx)
	if err != nil {
		return err
	}
	for _, m := range p.Moves {
		if m.To == api.FleetStatusDownloading && full[m.Location] && launched(fx, m.Location) == 0 {
			continue // no host could take its first instance: it stays NEW
		}
		ok, err := s.applyMove(ctx, tx, f, m)
		if err != nil {
			return err
		}
		changed = changed || ok
	}
	if err := s.applyComputes(ctx, tx, f, p, fx); err != nil {
		return err
	}
	if len(p.Lost) > 0 {
		if err := s.addEvent(ctx, tx, f.id(), api.EventCodeInstanceRecycled, now,
			"Instances %v of fleet %s were lost (their host restarted) and are replaced", p.Lost, f.id()); err != nil {
			return err
		}
	}
	for _, l := range p.Interrupted {
		if err := s.addEvent(ctx, tx, f.id(), api.EventCodeInstanceInterrupted, now,
			"Instance %s of fleet %s was lost (%s): its game sessions ended INTERRUPTED; it is replaced", l.ComputeName, f.id(), l.Reason); err != nil {
			return err
		}
	}
	if changed {
		return putFleet(ctx, tx, f)
	}
	return nil
}

// applyMove applies one location status change.
func (s *Service) applyMove(ctx context.Context, tx store.Tx, f *fleetRec, m move) (bool, error) {
	now := s.now()
	if m.Code != "" {
		ev := s.newEvent(f.id(), m.Code, now, m.Message)
		ev.ProcessLog = m.ProcessLog
		if err := putEvent(ctx, tx, ev); err != nil {
			return false, err
		}
	}
	if m.To == api.FleetStatusTerminated && m.Location == f.HomeLocation {
		return true, s.terminateFleet(ctx, tx, f)
	}
	if m.Direct {
		return s.jumpLocation(ctx, tx, f, m.Location, m.To, now)
	}
	return s.moveLocation(ctx, tx, f, m.Location, m.To, now)
}

// terminateFleet ends a DELETING fleet: every location and the fleet are
// TERMINATED (event FLEET_DELETED), its scaling policies are deleted.
func (s *Service) terminateFleet(ctx context.Context, tx store.Tx, f *fleetRec) error {
	now := s.now()
	for _, l := range f.Locations {
		if l.Location != f.HomeLocation {
			if _, err := s.moveLocation(ctx, tx, f, l.Location, api.FleetStatusTerminated, now); err != nil {
				return err
			}
		}
	}
	if _, err := s.moveLocation(ctx, tx, f, f.HomeLocation, api.FleetStatusTerminated, now); err != nil {
		return err
	}
	f.Attributes.TerminationTime = api.Time(now)
	pols, err := fleetPolicies(ctx, tx, f.id())
	if err != nil {
		return err
	}
	for _, p := range pols {
		if err := tx.Delete(ctx, hosting.KindScalingPolicy, policyID(f.id(), api.ToString(p.Policy.Name))); ignoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// applyComputes marks instances stopping, active, lost or deregistered.
func (s *Service) applyComputes(ctx context.Context, tx store.Tx, f *fleetRec, p plan, fx *effects) error {
	set := func(name string, st api.ComputeStatus, ist api.InstanceStatus) error {
		c, err := getCompute(ctx, tx, f.id(), name)
		if err != nil {
			return ignoreNotFound(err)
		}
		c.Status, c.InstanceStatus = st, ist
		if st == api.ComputeStatusActive {
			fx.activated = append(fx.activated, c.Location)
		}
		return putCompute(ctx, tx, c)
	}
	for _, st := range p.Stop {
		if err := s.markStopping(ctx, tx, f.id(), st); err != nil {
			return err
		}
		fx.stops = append(fx.stops, st)
	}
	for _, name := range p.Drain {
		if err := s.markDraining(ctx, tx, f.id(), name); err != nil {
			return err
		}
	}
	for _, name := range p.Activate {
		if err := set(name, api.ComputeStatusActive, api.InstanceStatusActive); err != nil {
			return err
		}
	}
	for _, name := range p.Lost {
		ids, err := liveProcesses(ctx, tx, f.id(), name)
		if err != nil {
			return err
		}
		fx.exited = append(fx.exited, ids...)
		if err := deleteCompute(ctx, tx, f.id(), name); err != nil {
			return err
		}
	}
	for _, l := range p.Interrupted {
		ids, err := liveProcesses(ctx, tx, f.id(), l.ComputeName)
		if err != nil {
			return err
		}
		fx.interrupted = append(fx.interrupted, ids...)
		if err := deleteCompute(ctx, tx, f.id(), l.ComputeName); err != nil {
			return err
		}
	}
	for _, name := range p.Deregister {
		if err := deleteCompute(ctx, tx, f.id(), name); err != nil {
			return err
		}
	}
	return nil
}

// liveProcesses returns the IDs of a compute's server processes that have
// not ended.
func liveProcesses(ctx context.Context, tx store.Tx, fleetID, compute string) ([]string, error) {
	var out []string
	err := store.Each(ctx, tx, store.Query{Kind: hosting.KindProcess, Parent: fleetID, HasParent: true}, func(r store.Record) error {
		p := new(hosting.Process)
		if err := store.Decode(r, p); err != nil {
			return err
		}
		if p.ComputeName == compute && p.State != hosting.ProcessTerminated {
			out = append(out, p.ID)
		}
		return nil
	})
	return out, err
}

// recordLaunches records the instances a plan starts, in order; a
// location whose hosts have no room gets no more of them (and an event,
// once): full names those locations. changed reports whether the fleet
// record changed.
func (s *Service) recordLaunches(ctx context.Context, tx store.Tx, f *fleetRec, locs []string, fx *effects) (changed bool, full map[string]bool, err error) {
	full = map[string]bool{}
	for _, loc := range locs {
		if full[loc] {
			continue
		}
		err := s.recordLaunch(ctx, tx, f, loc, fx)
		var nc *NoCapacityError
		switch {
		case errors.As(err, &nc):
			full[loc] = true
			ok, err := s.noCapacity(ctx, tx, f, nc)
			if err != nil {
				return false, nil, err
			}
			changed = changed || ok
		case err != nil:
			return false, nil, err
		case f.Own.NoCapacity[loc] != "":
			delete(f.Own.NoCapacity, loc)
			changed = true
		}
	}
	return changed, full, nil
}

// launched counts the instances recorded in a location.
func launched(fx *effects, loc string) int {
	n := 0
	for _, l := range fx.starts {
		if l.ref.Location == loc {
			n++
		}
	}
	return n
}

// recordLaunch records a new instance (PENDING) on the host chosen for it,
// with its auth token; the provider starts it after the commit.
func (s *Service) recordLaunch(ctx context.Context, tx store.Tx, f *fleetRec, loc string, fx *effects) error {
	if s.cfg.Provider == nil {
		return nil
	}
	id := s.newInstanceID()
	pl, err := s.placeInstance(ctx, tx, f, id, loc)
	if err != nil {
		return err
	}
	c := hosting.Compute{FleetID: f.id(), ComputeName: id, Location: loc, Status: api.ComputeStatusPending,
		InstanceStatus: api.InstanceStatusPending, IPAddress: pl.IPAddress,
		DNSName: s.dnsName(f, id, loc, pl.IPAddress), CreationTime: s.now(), Host: pl.Host,
		Dir: pl.Layout.Dir, GameRoot: pl.Layout.GameRoot}
	if generated(&f.Fleet) {
		c.CertificatePath = pl.Layout.CertificateDir
	}
	token := newToken()
	if err := putCompute(ctx, tx, &c); err != nil {
		return err
	}
	if err := putToken(ctx, tx, token, f.id(), id, zeroTime); err != nil {
		return err
	}
	fx.starts = append(fx.starts, launch{ref: InstanceRef{FleetID: f.id(), InstanceID: id, Location: loc},
		token: token, fleet: f.Fleet, own: f.Own, comp: c, hostDNS: pl.DNSName})
	return nil
}

// markStopping marks an instance TERMINATING, with why.
func (s *Service) markStopping(ctx context.Context, tx store.Tx, fleetID string, st stopReq) error {
	c, err := getCompute(ctx, tx, fleetID, st.ComputeName)
	if err != nil {
		return ignoreNotFound(err)
	}
	c.Status, c.InstanceStatus, c.StopReason = api.ComputeStatusTerminating, api.InstanceStatusTerminating, st.Reason
	return putCompute(ctx, tx, c)
}

// markDraining marks an instance whose host drains: sessions places no new
// game session on it.
func (s *Service) markDraining(ctx context.Context, tx store.Tx, fleetID, name string) error {
	c, err := getCompute(ctx, tx, fleetID, name)
	if err != nil {
		return ignoreNotFound(err)
	}
	c.Draining = true
	return putCompute(ctx, tx, c)
}

// purgeFleet forgets a fleet TERMINATED long ago: its record, events,
// logs' records and tags (and, after the commit, its directory).
func (s *Service) purgeFleet(ctx context.Context, tx store.Tx, f *fleetRec, fx *effects) error {
	var ids []string
	q := store.Query{Kind: hosting.KindFleetEvent, Parent: f.id(), HasParent: true}
	if err := store.Each(ctx, tx, q, func(r store.Record) error { ids = append(ids, r.ID); return nil }); err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.Delete(ctx, hosting.KindFleetEvent, id); ignoreNotFound(err) != nil {
			return err
		}
	}
	if err := deleteSetupLogs(ctx, tx, f.id()); err != nil {
		return err
	}
	if err := deleteOutputHolders(ctx, tx, f.id()); err != nil {
		return err
	}
	if s.cfg.RemoveTags != nil {
		if err := s.cfg.RemoveTags(ctx, tx, f.arn()); err != nil {
			return err
		}
	}
	if dir := s.fleetDir(f.id()); dir != "" {
		fx.removeDirs = append(fx.removeDirs, dir)
	}
	return ignoreNotFound(tx.Delete(ctx, hosting.KindFleet, f.id()))
}

// runEffects runs what a committed reconciler transaction decided.
func (s *Service) runEffects(ctx context.Context, fx *effects) {
	for _, l := range fx.starts {
		s.startInstance(ctx, l)
	}
	for _, st := range fx.stops {
		if err := s.cfg.Provider.StopInstance(st.ComputeName, st.Reason); err != nil && !errors.Is(err, ErrUnknownInstance) {
			s.log.Warn("fleets: stopping instance", "instance", st.ComputeName, "err", err)
		}
	}
	for _, id := range fx.exited {
		s.reportExit(ctx, id, -1, "its instance was lost")
	}
	for _, id := range fx.interrupted {
		s.reportLost(ctx, id, "its instance was lost with its host")
	}
	for _, loc := range fx.activated {
		s.clearBackoff(fx.fleetID, loc)
	}
	for _, d := range fx.removeDirs {
		if err := os.RemoveAll(d); err != nil {
			s.log.Warn("fleets: removing a purged fleet's directory", "err", err)
		}
	}
}

// startInstance asks the provider to start a recorded instance. If it
// cannot even begin, the failure is recorded like a failed setup step.
func (s *Service) startInstance(ctx context.Context, l launch) {
	h := s.HooksFor(l.ref)
	spec, step, err := s.instanceSpec(ctx, l)
	if err == nil {
		step = StepDownload
		err = s.cfg.Provider.StartInstance(ctx, spec, h)
	}
	if err != nil {
		h.StepFailed(ctx, step, err)
		h.InstanceStopped(ctx)
	}
}

// instanceSpec builds what the provider needs to run an instance; on error
// it says which setup step failed.
//
// An instance on a pool host gets no BuildDir: its host downloads the build
// from the replica it is connected to, which need not be this one (with
// several replicas a build's files are on the replica it was uploaded to).
func (s *Service) instanceSpec(ctx context.Context, l launch) (InstanceSpec, Step, error) {
	spec := InstanceSpec{InstanceRef: l.ref, BuildID: api.ToString(l.fleet.Attributes.BuildId),
		RuntimeConfiguration: l.fleet.RuntimeConfiguration, Env: s.processEnv(l.ref, l.token)}
	if !s.onPoolHost(l) {
		dir, err := s.cfg.Builds.BuildDir(ctx, spec.BuildID)
		if err != nil {
			return InstanceSpec{}, StepDownload, err
		}
		spec.BuildDir = dir
	}
	if generated(&l.fleet) {
		files, req, err := s.issueInstanceCertificate(l)
		if err != nil {
			return InstanceSpec{}, StepBuild, err
		}
		spec.Certificate, spec.CertificateRequest = files, req
	}
	return spec, "", nil
}

// onPoolHost reports whether a launch runs on a pool host rather than
// this replica's in-process provider.
func (s *Service) onPoolHost(l launch) bool {
	return l.comp.Host != "" && l.comp.Host != s.cfg.ReplicaID
}

// processEnv is the environment of every server process of an instance:
// what the Server SDK's parameterless InitSDK reads, and Config.ProcessEnv.
func (s *Service) processEnv(ref InstanceRef, token string) []string {
	env := []string{
		"GAMELIFT_SDK_WEBSOCKET_URL=" + s.cfg.SDKEndpoint,
		"GAMELIFT_SDK_AUTH_TOKEN=" + token,
		"GAMELIFT_SDK_FLEET_ID=" + ref.FleetID,
		"GAMELIFT_SDK_HOST_ID=" + ref.InstanceID,
	}
	if s.cfg.CABundle != "" {
		// Before ProcessEnv, so an operator's SSL_CERT_FILE wins.
		env = append(env, "SSL_CERT_FILE="+s.cfg.CABundle)
	}
	return append(env, s.cfg.ProcessEnv...)
}

// newToken returns a fresh compute auth token: 32 random bytes, hex (64
// characters, URL-safe, within the model's pattern and length).
func newToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("fleets: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func generated(f *hosting.Fleet) bool {
	cc := f.Attributes.CertificateConfiguration
	return cc != nil && cc.CertificateType == api.CertificateTypeGenerated
}
