package hosts

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/store"
)

// Bounds of enrolment.
const (
	// maxEnrolBody bounds an enrolment request.
	maxEnrolBody = 16 << 10
	// maxTokenTTL bounds an enrolment token's life.
	maxTokenTTL = 7 * 24 * time.Hour
	// maxCapacity bounds the instances of one type a host declares.
	maxCapacity = 1000
)

// namePattern is what a pool name may be.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

// CreateEnrolmentToken creates an enrolment token for pool, valid for
// ttl, for at most maxHosts hosts (0: any number until it expires). Only
// the hash of its secret is stored: the token is returned once.
func (s *Service) CreateEnrolmentToken(ctx context.Context, pool string, ttl time.Duration, maxHosts int) (string, time.Time, error) {
	switch {
	case !namePattern.MatchString(pool):
		return "", time.Time{}, api.NewInvalidRequestException("Pool %q is not a pool name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", pool)
	case ttl <= 0 || ttl > maxTokenTTL:
		return "", time.Time{}, api.NewInvalidRequestException("Expires must be a duration above 0 and at most %s", maxTokenTTL)
	case maxHosts < 0:
		return "", time.Time{}, api.NewInvalidRequestException("MaxHosts must be 0 (any number) or more")
	}
	tok := hostproto.NewEnrolmentToken(s.cfg.CADER)
	now := s.now()
	rec := EnrolmentToken{ID: tok.ID, Pool: pool, SecretHash: hostproto.SecretHash(tok.Secret), Created: now,
		Expires: now.Add(ttl), MaxHosts: maxHosts}
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		return store.PutJSON(ctx, tx, store.Record{Kind: KindEnrolmentToken, ID: rec.ID, Rank: rec.Expires.UnixMilli()}, &rec)
	})
	if err != nil {
		return "", time.Time{}, err
	}
	s.log.Info("hosts: enrolment token created", "pool", pool, "token", tok.ID, "expires", rec.Expires, "maxHosts", maxHosts)
	return tok.String(), rec.Expires, nil
}

// ServeEnrol enrols a host: POST an hostproto.EnrolRequest with a valid
// enrolment token; the answer is the host's credential and Hoist's CA
// certificate. A refused token is 401 whatever was wrong with it.
func (s *Service) ServeEnrol(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "enrol with POST", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > maxEnrolBody {
		refuse(w, &httpError{http.StatusRequestEntityTooLarge, "the enrolment request is too large"})
		return
	}
	var in hostproto.EnrolRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEnrolBody+1))
	if err != nil || len(body) > maxEnrolBody || json.Unmarshal(body, &in) != nil {
		refuse(w, &httpError{http.StatusBadRequest, "the body must be an enrolment request (JSON), at most 16 KiB"})
		return
	}
	out, err := s.enrol(r.Context(), in)
	if err != nil {
		var ae api.Error
		if errors.As(err, &ae) {
			err = &httpError{http.StatusBadRequest, ae.ErrorMessage()}
		} else if !errors.As(err, new(*httpError)) {
			s.log.Error("hosts: enrolment failed", "err", err)
		}
		refuse(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// errBadToken is every refused token's answer.
var errBadToken = &httpError{http.StatusUnauthorized, "the enrolment token is unknown, expired, used up, or for another pool"}

// enrol checks an enrolment request and records the new host.
func (s *Service) enrol(ctx context.Context, in hostproto.EnrolRequest) (hostproto.EnrolReply, error) {
	if err := s.checkEnrol(in); err != nil {
		return hostproto.EnrolReply{}, err
	}
	tok, err := hostproto.ParseEnrolmentToken(in.Token)
	if err != nil {
		return hostproto.EnrolReply{}, errBadToken
	}
	secret := hostproto.NewHostSecret()
	now := s.now()
	h := &Host{HostID: "host-" + s.cfg.NewID(), Pool: in.Pool, Location: in.Location, Address: in.Address,
		DNSName: in.DnsName, Hostname: in.Hostname, Capacity: in.Instances, Status: StatusActive,
		SecretHash: hostproto.SecretHash(secret), EnrolledAt: now, LastSeen: now}
	err = s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var t EnrolmentToken
		if _, err := store.GetJSON(ctx, tx, KindEnrolmentToken, tok.ID, &t); err != nil {
			return errors.Join(ignoreNotFound(err), errBadToken)
		}
		ok := subtle.ConstantTimeCompare([]byte(hostproto.SecretHash(tok.Secret)), []byte(t.SecretHash)) == 1
		if !ok || !now.Before(t.Expires) || t.Pool != in.Pool || (t.MaxHosts > 0 && t.Used >= t.MaxHosts) {
			return errBadToken
		}
		t.Used++
		if err := store.PutJSON(ctx, tx, store.Record{Kind: KindEnrolmentToken, ID: t.ID, Rank: t.Expires.UnixMilli()}, &t); err != nil {
			return err
		}
		return putHost(ctx, tx, h)
	})
	if err != nil {
		return hostproto.EnrolReply{}, err
	}
	s.log.Info("hosts: host enrolled", "host", h.HostID, "pool", h.Pool, "location", h.Location, "address", h.Address,
		"capacity", h.Capacity, "token", tok.ID)
	return hostproto.EnrolReply{HostId: h.HostID, HostSecret: secret, CACertificate: string(s.cfg.CACertificate)}, nil
}

// checkEnrol checks an enrolment request's fields.
func (s *Service) checkEnrol(in hostproto.EnrolRequest) error {
	switch {
	case !namePattern.MatchString(in.Pool):
		return api.NewInvalidRequestException("Pool %q is not a pool name", clip(in.Pool))
	case !slices.Contains(s.cfg.Locations, in.Location):
		return api.NewInvalidRequestException("Location %q is not a location this Hoist's fleets can use", clip(in.Location))
	case net.ParseIP(in.Address) == nil:
		return api.NewInvalidRequestException("Address %q is not an IP address", clip(in.Address))
	case len(in.DnsName) > 253 || len(in.Hostname) > 253:
		return api.NewInvalidRequestException("DnsName and Hostname are at most 253 characters")
	case len(in.Instances) == 0 || len(in.Instances) > 100:
		return api.NewInvalidRequestException("Instances must name 1 to 100 instance types with their counts")
	}
	for typ, n := range in.Instances {
		if typ != "*" && !api.EC2InstanceType(typ).IsValid() {
			return api.NewInvalidRequestException("Instances: %q is not an EC2 instance type (or *)", clip(typ))
		}
		if n < 1 || n > maxCapacity {
			return api.NewInvalidRequestException("Instances: %s=%d: a count is 1 to %d", typ, n, maxCapacity)
		}
	}
	return nil
}
