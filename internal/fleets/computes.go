package fleets

import (
	"context"
	"errors"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

// computeName returns the compute name of a ComputeName that may be an ARN
// (arn:...:compute/<fleet ID>/<name>).
func computeName(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		if i := strings.LastIndex(nameOrARN, "/"); i >= 0 {
			return nameOrARN[i+1:]
		}
	}
	return nameOrARN
}

// apiCompute describes a compute as the API reports it.
func (s *Service) apiCompute(f *fleetRec, c *hosting.Compute) api.Compute {
	out := api.Compute{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, ComputeName: api.String(c.ComputeName),
		ComputeStatus: c.Status, IpAddress: api.String(c.IPAddress), Location: api.String(c.Location),
		CreationTime: api.Time(c.CreationTime), OperatingSystem: f.Attributes.OperatingSystem}
	if c.DNSName != "" {
		out.DnsName = api.String(c.DNSName)
	}
	if c.IPAddress == "" {
		out.IpAddress = nil
	}
	if f.anywhere() {
		out.ComputeArn = api.String(s.computeARN(f.id(), c.ComputeName))
		out.GameLiftServiceSdkEndpoint = api.String(s.cfg.SDKEndpoint)
		if s.cfg.AgentEndpoint != "" {
			out.GameLiftAgentEndpoint = api.String(s.cfg.AgentEndpoint)
		}
	} else {
		out.InstanceId, out.Type = api.String(c.ComputeName), f.Attributes.InstanceType
	}
	return out
}

func (s *Service) computeARN(fleetID, name string) string { return s.arn("compute", fleetID+"/"+name) }

// findCompute reads a fleet and one of its computes for an API call.
func findCompute(ctx context.Context, tx store.Tx, fleetID, name string) (*fleetRec, *hosting.Compute, error) {
	f, err := findFleet(ctx, tx, fleetID, true)
	if err != nil {
		return nil, nil, err
	}
	name = computeName(name)
	c, err := getCompute(ctx, tx, f.id(), name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, api.NewNotFoundException("fleet %s has no compute %s", f.id(), name)
	}
	return f, c, err
}

// RegisterCompute registers a compute with an ANYWHERE fleet, in one of its
// custom locations (default: its home location). Registering a name again
// (the GameLift Agent does at every start) updates its addresses and
// certificate path; in another location it is ConflictException.
func (s *Service) RegisterCompute(ctx context.Context, in *api.RegisterComputeInput) (*api.RegisterComputeOutput, error) {
	// GameLift: "This parameter is required when registering a compute for
	// an Anywhere fleet" (Location); "When registering an Anywhere fleet, an
	// IP address is required" (IpAddress). Only Anywhere fleets register
	// computes, so both are checked first.
	switch {
	case api.ToString(in.Location) == "":
		return nil, api.NewInvalidRequestException("Location is required to register a compute with an ANYWHERE fleet: one of its custom locations")
	case api.ToString(in.IpAddress) == "":
		return nil, api.NewInvalidRequestException("IpAddress is required to register a compute with an ANYWHERE fleet (DnsName alone is not enough)")
	}
	var out api.Compute
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		if err := registrable(f); err != nil {
			return err
		}
		l, err := f.liveLocation(locationName(api.ToString(in.Location)))
		if err != nil {
			return err
		}
		c, err := s.registerTx(ctx, tx, f, l.Location, in)
		if err == nil {
			out = s.apiCompute(f, c)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.RegisterComputeOutput{Compute: &out}, nil
}

// registrable checks that computes can register with a fleet.
func registrable(f *fleetRec) error {
	switch st := f.status(); {
	case !f.anywhere():
		return api.NewInvalidRequestException("fleet %s is an EC2 fleet: its instances are its computes; RegisterCompute is for ANYWHERE fleets", f.id())
	case creating(st):
		return api.NewNotReadyException("fleet %s is %s: try again when it is ACTIVE", f.id(), st)
	case st != api.FleetStatusActive:
		return api.NewInvalidRequestException("fleet %s is %s: computes can register only with an ACTIVE fleet", f.id(), st)
	}
	return nil
}

func (s *Service) registerTx(ctx context.Context, tx store.Tx, f *fleetRec, loc string, in *api.RegisterComputeInput) (*hosting.Compute, error) {
	name := api.ToString(in.ComputeName)
	c, err := getCompute(ctx, tx, f.id(), name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c = &hosting.Compute{FleetID: f.id(), ComputeName: name, Location: loc, Status: api.ComputeStatusActive,
			CreationTime: s.now()}
	case err != nil:
		return nil, err
	case c.Location != loc:
		return nil, api.NewConflictException("compute %s is registered in location %s of fleet %s, not %s: deregister it first",
			name, c.Location, f.id(), loc)
	}
	c.IPAddress, c.DNSName, c.CertificatePath = api.ToString(in.IpAddress), api.ToString(in.DnsName), api.ToString(in.CertificatePath)
	return c, putCompute(ctx, tx, c)
}

// DeregisterCompute removes a compute from an ANYWHERE fleet (with its auth
// tokens): it can no longer host game sessions or connect new processes.
func (s *Service) DeregisterCompute(ctx context.Context, in *api.DeregisterComputeInput) (*api.DeregisterComputeOutput, error) {
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, api.ToString(in.FleetId), api.ToString(in.ComputeName))
		if err != nil {
			return err
		}
		if !f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an EC2 fleet: change its capacity (UpdateFleetCapacity) instead", f.id())
		}
		return deleteCompute(ctx, tx, f.id(), c.ComputeName)
	})
	if err != nil {
		return nil, err
	}
	return &api.DeregisterComputeOutput{}, nil
}

// DescribeCompute describes one compute (an instance of an EC2 fleet, or a
// registered compute).
func (s *Service) DescribeCompute(ctx context.Context, in *api.DescribeComputeInput) (*api.DescribeComputeOutput, error) {
	var out api.Compute
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, api.ToString(in.FleetId), api.ToString(in.ComputeName))
		if err == nil {
			out = s.apiCompute(f, c)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.DescribeComputeOutput{Compute: &out}, nil
}

// ListCompute lists a fleet's computes, optionally of one location and
// status, by name.
func (s *Service) ListCompute(ctx context.Context, in *api.ListComputeInput) (*api.ListComputeOutput, error) {
	out := &api.ListComputeOutput{ComputeList: []api.Compute{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if nf := (*api.NotFoundException)(nil); errors.As(err, &nf) {
			// The model lists no NotFoundException for ListCompute.
			return api.NewInvalidRequestException("%s", nf.Message)
		}
		if err != nil {
			return err
		}
		loc := locationName(api.ToString(in.Location))
		q := store.Query{Kind: hosting.KindCompute, Parent: f.id(), HasParent: true, Key: loc, HasKey: loc != ""}
		n := pageSize(in.Limit, defaultPage, 1000)
		_, next, err := paging.Records(ctx, tx, q, api.ToString(in.NextToken), n, func(r store.Record) (bool, error) {
			c := new(hosting.Compute)
			if err := store.Decode(r, c); err != nil {
				return false, err
			}
			if in.ComputeStatus != "" && string(c.Status) != string(in.ComputeStatus) {
				return false, nil
			}
			out.ComputeList = append(out.ComputeList, s.apiCompute(f, c))
			return true, nil
		})
		out.NextToken = paging.Token(next)
		return err
	})
	return out, err
}

// GetComputeAuthToken issues an auth token for a compute's server
// processes, valid for Timings.TokenTTL. Only its SHA-256 is stored.
func (s *Service) GetComputeAuthToken(ctx context.Context, in *api.GetComputeAuthTokenInput) (*api.GetComputeAuthTokenOutput, error) {
	token := newToken()
	expires := s.tokenNow().Add(s.t.TokenTTL)
	var out *api.GetComputeAuthTokenOutput
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, api.ToString(in.FleetId), api.ToString(in.ComputeName))
		if err != nil {
			return err
		}
		out = &api.GetComputeAuthTokenOutput{AuthToken: api.String(token), ExpirationTimestamp: api.Time(expires),
			FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, ComputeName: api.String(c.ComputeName)}
		if f.anywhere() {
			out.ComputeArn = api.String(s.computeARN(f.id(), c.ComputeName))
		}
		return putToken(ctx, tx, token, f.id(), c.ComputeName, expires)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetComputeAccess answers for an instance of an EC2 fleet with its
// identity and no credentials: Hoist's instances are directories on the
// Hoist host, reached through that host (there is no Systems Manager).
func (s *Service) GetComputeAccess(ctx context.Context, in *api.GetComputeAccessInput) (*api.GetComputeAccessOutput, error) {
	var out *api.GetComputeAccessOutput
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, api.ToString(in.FleetId), api.ToString(in.ComputeName))
		if err != nil {
			return err
		}
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: you reach its computes yourself", f.id())
		}
		out = &api.GetComputeAccessOutput{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn,
			ComputeName: api.String(c.ComputeName), Target: api.String(c.ComputeName)}
		return nil
	})
	return out, err
}

// apiInstance describes an instance of an EC2 fleet.
func apiInstance(f *fleetRec, c *hosting.Compute) api.Instance {
	st := c.InstanceStatus
	if st == "" {
		st = api.InstanceStatus(c.Status)
	}
	out := api.Instance{FleetId: f.Attributes.FleetId, FleetArn: f.Attributes.FleetArn, InstanceId: api.String(c.ComputeName),
		IpAddress: api.String(c.IPAddress), Location: api.String(c.Location), OperatingSystem: f.Attributes.OperatingSystem,
		Status: st, Type: f.Attributes.InstanceType, CreationTime: api.Time(c.CreationTime)}
	if c.DNSName != "" {
		out.DnsName = api.String(c.DNSName)
	}
	return out
}

// DescribeInstances describes the instances of an EC2 fleet in one location
// (default: home), or one instance.
func (s *Service) DescribeInstances(ctx context.Context, in *api.DescribeInstancesInput) (*api.DescribeInstancesOutput, error) {
	if err := paging.Check(api.ToString(in.NextToken), store.OrderID, false); err != nil {
		return nil, err // a bad token is refused whatever the fleet
	}
	out := &api.DescribeInstancesOutput{Instances: []api.Instance{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, err := findFleet(ctx, tx, api.ToString(in.FleetId), true)
		if err != nil {
			return err
		}
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: use ListCompute", f.id())
		}
		if id := api.ToString(in.InstanceId); id != "" {
			_, c, err := findCompute(ctx, tx, f.id(), id)
			if err == nil {
				out.Instances = append(out.Instances, apiInstance(f, c))
			}
			return err
		}
		l, err := f.liveLocation(api.ToString(in.Location))
		if err != nil {
			return err
		}
		q := store.Query{Kind: hosting.KindCompute, Parent: f.id(), HasParent: true, Key: l.Location, HasKey: true}
		recs, next, err := paging.Records(ctx, tx, q, api.ToString(in.NextToken), pageSize(in.Limit, defaultPage, 1000), nil)
		if err != nil {
			return err
		}
		for _, r := range recs {
			c := new(hosting.Compute)
			if err := store.Decode(r, c); err != nil {
				return err
			}
			out.Instances = append(out.Instances, apiInstance(f, c))
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	return out, err
}

// GetInstanceAccess answers for an instance of an EC2 fleet with its
// address and no credentials (Hoist runs no remote access service).
func (s *Service) GetInstanceAccess(ctx context.Context, in *api.GetInstanceAccessInput) (*api.GetInstanceAccessOutput, error) {
	var out *api.GetInstanceAccessOutput
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		f, c, err := findCompute(ctx, tx, api.ToString(in.FleetId), api.ToString(in.InstanceId))
		if err != nil {
			return err
		}
		if f.anywhere() {
			return api.NewInvalidRequestException("fleet %s is an ANYWHERE fleet: it has no instances", f.id())
		}
		out = &api.GetInstanceAccessOutput{InstanceAccess: &api.InstanceAccess{FleetId: f.Attributes.FleetId,
			InstanceId: api.String(c.ComputeName), IpAddress: api.String(c.IPAddress), OperatingSystem: f.Attributes.OperatingSystem}}
		return nil
	})
	return out, err
}
