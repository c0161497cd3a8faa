package fleets

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// CreateFleet creates an EC2 fleet (a build and a runtime configuration,
// run on instances the provider starts) or an ANYWHERE fleet (custom
// locations, computes registered by hand). The fleet starts NEW with one
// desired instance per location; the reconciler takes it from there.
// ANYWHERE fleets are ACTIVE at once.
func (s *Service) CreateFleet(ctx context.Context, in *api.CreateFleetInput) (*api.CreateFleetOutput, error) {
	f, err := s.newFleet(in)
	if err != nil {
		return nil, err
	}
	if generated(&f.Fleet) {
		if _, err := s.fleetCertificate(f.id(), f.locationNames(), s.now()); err != nil {
			return nil, api.NewInternalServiceException("issuing the fleet's certificate failed: %v", err)
		}
	}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return s.createTx(ctx, tx, f, in)
	})
	if err != nil {
		if dir := s.fleetDir(f.id()); generated(&f.Fleet) && dir != "" {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	s.wake()
	attrs := f.Attributes
	return &api.CreateFleetOutput{FleetAttributes: &attrs, LocationStates: locationStates(&f.Fleet)}, nil
}

// newFleet checks a CreateFleet request and returns the fleet it creates
// (without what needs the store).
func (s *Service) newFleet(in *api.CreateFleetInput) (*fleetRec, error) {
	ct := in.ComputeType
	if ct == "" {
		ct = api.ComputeTypeEc2
	}
	if ct != api.ComputeTypeEc2 && ct != api.ComputeTypeAnywhere {
		return nil, api.NewInvalidRequestException("ComputeType %s is not supported by Hoist: use EC2 or ANYWHERE", ct)
	}
	if in.ScriptId != nil {
		return nil, api.NewInvalidRequestException("Realtime scripts (ScriptId) are not supported by Hoist: give a BuildId")
	}
	id := "fleet-" + s.cfg.NewID()
	now := s.now()
	f := &fleetRec{}
	f.Attributes = api.FleetAttributes{
		FleetId: api.String(id), FleetArn: api.String(s.arn("fleet", id)), Name: in.Name,
		Description: in.Description, CreationTime: api.Time(now), Status: api.FleetStatusNew, ComputeType: ct,
		NewGameSessionProtectionPolicy: in.NewGameSessionProtectionPolicy, ResourceCreationLimitPolicy: in.ResourceCreationLimitPolicy,
		MetricGroups: in.MetricGroups, InstanceRoleArn: in.InstanceRoleArn, LogPaths: in.LogPaths,
		InstanceRoleCredentialsProvider: in.InstanceRoleCredentialsProvider, AnywhereConfiguration: in.AnywhereConfiguration,
		CertificateConfiguration: &api.CertificateConfiguration{CertificateType: api.CertificateTypeDisabled},
	}
	if f.Attributes.NewGameSessionProtectionPolicy == "" {
		f.Attributes.NewGameSessionProtectionPolicy = api.ProtectionPolicyNoprotection
	}
	if cc := in.CertificateConfiguration; cc != nil && cc.CertificateType != "" {
		f.Attributes.CertificateConfiguration = &api.CertificateConfiguration{CertificateType: cc.CertificateType}
	}
	var err error
	if ct == api.ComputeTypeAnywhere {
		err = s.newAnywhereFleet(f, in)
	} else {
		err = s.newEC2Fleet(f, in)
	}
	return f, err
}

// newEC2Fleet fills in an EC2 fleet: build, instance type, runtime
// configuration, port settings and remote locations.
func (s *Service) newEC2Fleet(f *fleetRec, in *api.CreateFleetInput) error {
	if api.ToString(in.BuildId) == "" {
		return api.NewInvalidRequestException("BuildId is required for an EC2 fleet")
	}
	if in.EC2InstanceType == "" {
		return api.NewInvalidRequestException("EC2InstanceType is required for an EC2 fleet")
	}
	a := &f.Attributes
	a.BuildId, a.InstanceType = api.String(buildIDOf(*in.BuildId)), in.EC2InstanceType
	a.FleetType = in.FleetType
	if a.FleetType == "" {
		a.FleetType = api.FleetTypeOnDemand
	}
	a.ServerLaunchPath, a.ServerLaunchParameters = in.ServerLaunchPath, in.ServerLaunchParameters
	switch {
	case in.RuntimeConfiguration != nil:
		f.RuntimeConfiguration = *in.RuntimeConfiguration
	case api.ToString(in.ServerLaunchPath) != "":
		f.RuntimeConfiguration = api.RuntimeConfiguration{ServerProcesses: []api.ServerProcess{{
			LaunchPath: in.ServerLaunchPath, Parameters: in.ServerLaunchParameters, ConcurrentExecutions: api.Int32(1)}}}
	default:
		return api.NewInvalidRequestException("RuntimeConfiguration is required for an EC2 fleet")
	}
	if err := checkPermissions("EC2InboundPermissions", in.EC2InboundPermissions); err != nil {
		return err
	}
	if len(in.EC2InboundPermissions) > maxPermissions {
		return api.NewLimitExceededException("at most %d EC2InboundPermissions are allowed", maxPermissions)
	}
	f.PortSettings = in.EC2InboundPermissions
	f.HomeLocation = s.cfg.Region
	f.Locations = []hosting.FleetLocation{newFleetLocation(s.cfg.Region)}
	// GameLift: "When using this parameter, Amazon GameLift Servers
	// requires you to include your home location in the request."
	if len(in.Locations) > 0 && !slices.ContainsFunc(in.Locations, func(lc api.LocationConfiguration) bool {
		return api.ToString(lc.Location) == s.cfg.Region
	}) {
		return api.NewInvalidRequestException("Locations must include the fleet's home location %s", s.cfg.Region)
	}
	for _, lc := range in.Locations {
		name := api.ToString(lc.Location)
		if err := s.checkRemoteLocation(f, name); err != nil {
			return err
		}
		if name != s.cfg.Region {
			f.Locations = append(f.Locations, newFleetLocation(name))
		}
	}
	return nil
}

// newFleetLocation is a new managed location: NEW, with one desired
// instance (minimum 0, maximum 1), as GameLift sets it.
func newFleetLocation(name string) hosting.FleetLocation {
	return hosting.FleetLocation{Location: name, Status: api.FleetStatusNew, Desired: 1, Min: 0, Max: 1}
}

// checkRemoteLocation checks a location to add to an EC2 fleet.
func (s *Service) checkRemoteLocation(f *fleetRec, name string) error {
	switch {
	case isCustomLocation(name):
		return api.NewInvalidRequestException("custom location %s can only be used by ANYWHERE fleets", name)
	case !s.locations[name]:
		return api.NewInvalidRequestException("location %s is not a location Hoist hosts in (see ListLocations)", name)
	case name != f.HomeLocation && f.location(name) != nil && f.location(name).Status != api.FleetStatusTerminated:
		return api.NewInvalidRequestException("fleet %s already has location %s", f.id(), name)
	case len(f.Locations) >= maxLocations:
		return api.NewLimitExceededException("a fleet can have at most %d locations", maxLocations)
	}
	return nil
}

// newAnywhereFleet fills in an ANYWHERE fleet: its custom locations (the
// first is its home) and an optional runtime configuration (for the
// GameLift Agent).
func (s *Service) newAnywhereFleet(f *fleetRec, in *api.CreateFleetInput) error {
	switch {
	case in.BuildId != nil:
		return api.NewInvalidRequestException("an ANYWHERE fleet takes no BuildId: its game servers run on computes you register")
	case in.EC2InstanceType != "":
		return api.NewInvalidRequestException("an ANYWHERE fleet takes no EC2InstanceType")
	case len(in.EC2InboundPermissions) > 0:
		return api.NewInvalidRequestException("an ANYWHERE fleet takes no EC2InboundPermissions")
	case len(in.Locations) == 0:
		return api.NewInvalidRequestException("an ANYWHERE fleet needs Locations: one or more custom locations (CreateLocation)")
	case generated(&f.Fleet):
		return api.NewInvalidRequestException("CertificateConfiguration GENERATED is for EC2 fleets: an Anywhere compute gives its own CertificatePath to RegisterCompute")
	}
	if in.RuntimeConfiguration != nil {
		if err := checkRuntime(in.RuntimeConfiguration, false, ""); err != nil {
			return err
		}
		f.RuntimeConfiguration = *in.RuntimeConfiguration
	}
	for _, lc := range in.Locations {
		name := locationName(api.ToString(lc.Location))
		if !isCustomLocation(name) {
			return api.NewInvalidRequestException("location %s is not a custom location: ANYWHERE fleets use custom locations (CreateLocation)", name)
		}
		if f.location(name) != nil {
			return api.NewInvalidRequestException("location %s is given twice", name)
		}
		if f.HomeLocation == "" {
			f.HomeLocation = name
		}
		f.Locations = append(f.Locations, hosting.FleetLocation{Location: name, Status: api.FleetStatusNew})
	}
	return nil
}

// createTx stores a new fleet: the build must be READY (EC2) and the custom
// locations must exist (ANYWHERE).
func (s *Service) createTx(ctx context.Context, tx store.Tx, f *fleetRec, in *api.CreateFleetInput) error {
	now := s.now()
	if f.anywhere() {
		for _, l := range f.Locations {
			if _, err := getLocation(ctx, tx, l.Location); errors.Is(err, store.ErrNotFound) {
				return api.NewNotFoundException("custom location %s does not exist (create it with CreateLocation)", l.Location)
			} else if err != nil {
				return err
			}
		}
	} else if err := s.useBuild(ctx, tx, f); err != nil {
		return err
	}
	if err := s.addEvent(ctx, tx, f.id(), api.EventCodeFleetCreated, now, "Fleet %s (%s) was created", f.id(), api.ToString(f.Attributes.Name)); err != nil {
		return err
	}
	for _, l := range f.Locations[1:] {
		if err := s.addEvent(ctx, tx, f.id(), api.EventCodeLocationStatePending, now, "Location %s of fleet %s was added", l.Location, f.id()); err != nil {
			return err
		}
	}
	if f.anywhere() {
		for _, l := range f.Locations {
			if _, err := s.jumpLocation(ctx, tx, f, l.Location, api.FleetStatusActive, now); err != nil {
				return err
			}
		}
	}
	if s.cfg.SetTags != nil && len(in.Tags) > 0 {
		if err := s.cfg.SetTags(ctx, tx, f.arn(), in.Tags); err != nil {
			return err
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return tx.Insert(ctx, store.Record{Kind: hosting.KindFleet, ID: f.id(), Key: string(f.status()), Data: data})
}

// useBuild checks the fleet's build (it must exist and be READY) and copies
// its ARN and operating system to the fleet; then it checks the runtime
// configuration against that operating system.
func (s *Service) useBuild(ctx context.Context, tx store.Tx, f *fleetRec) error {
	id := api.ToString(f.Attributes.BuildId)
	if s.cfg.Builds == nil || s.cfg.Provider == nil {
		return api.NewInvalidRequestException("this Hoist runs no EC2 fleets (it has no build store or compute provider): create an ANYWHERE fleet")
	}
	b, err := s.cfg.Builds.Build(ctx, tx, id)
	var nf *api.NotFoundException
	if errors.As(err, &nf) || errors.Is(err, store.ErrNotFound) {
		return api.NewNotFoundException("build %s does not exist", id)
	}
	if err != nil {
		return err
	}
	if b.Status != api.BuildStatusReady {
		return api.NewInvalidRequestException("build %s is %s: a fleet needs a READY build", id, b.Status)
	}
	f.Attributes.BuildArn = b.BuildArn
	if f.Attributes.BuildArn == nil {
		f.Attributes.BuildArn = api.String(s.arn("build", id))
	}
	f.Attributes.OperatingSystem = b.OperatingSystem
	return checkRuntime(&f.RuntimeConfiguration, true, b.OperatingSystem)
}

// buildIDOf returns the build ID of a BuildId that may be an ARN.
func buildIDOf(idOrARN string) string { return locationName(idOrARN) }

// DeleteFleet deletes a fleet: it goes DELETING, the reconciler stops its
// instances (or deregisters its Anywhere computes), and it ends TERMINATED
// with the event FLEET_DELETED. Only an ACTIVE or ERROR fleet can be deleted
// (else InvalidFleetStatusException); deleting a fleet that is already
// DELETING does nothing.
func (s *Service) DeleteFleet(ctx context.Context, in *api.DeleteFleetInput) error {
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil || f.status() == api.FleetStatusDeleting {
			return err // deleting again changes nothing
		}
		if st := f.status(); st != api.FleetStatusActive && st != api.FleetStatusError {
			return api.NewInvalidFleetStatusException("fleet %s is %s: a fleet can be deleted only when it is ACTIVE or ERROR", f.id(), st)
		}
		now := s.now()
		for _, l := range f.Locations {
			if l.Location != f.HomeLocation && l.Status != api.FleetStatusTerminated {
				if _, err := s.moveLocation(ctx, tx, f, l.Location, api.FleetStatusDeleting, now); err != nil {
					return err
				}
			}
		}
		if _, err := s.moveLocation(ctx, tx, f, f.HomeLocation, api.FleetStatusDeleting, now); err != nil {
			return err
		}
		return putFleet(ctx, tx, f)
	})
	if err == nil {
		s.wake()
	}
	return err
}
