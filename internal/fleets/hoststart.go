package fleets

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// An instance's start on a pool host carries two secrets: the compute auth
// token of its server processes and, on a GENERATED fleet, its
// certificate's private key. Neither is ever written to the store (it
// keeps the token's hash only). When the replica that decided the start
// holds no connection to the host, the start travels to the replica that
// does without them (internal/hosts, relay.go), and that replica makes
// them anew with StartSecrets.

// CertificateRequest is what the certificate of an instance on a pool host
// names, without the certificate or its key: the fleet's locations (their
// wildcard names) and its host's address and DNS name ("" if none).
type CertificateRequest struct {
	Locations []string `json:"locations"`
	IPAddress string   `json:"ipAddress,omitempty"`
	DNSName   string   `json:"dnsName,omitempty"`
}

// StartSecrets makes the secrets of an instance's start on a pool host
// connected to this replica, decided by another replica: a fresh compute
// auth token, whose hash replaces the instance's tokens in the store (the
// deciding replica's token is never sent, so no process knows it), in the
// environment of its server processes (as processEnv makes it); and, for
// a request, a certificate of its own from this replica's CA. It returns
// ErrUnknownInstance when the instance is no longer PENDING (gone, or
// stopping).
func (s *Service) StartSecrets(ctx context.Context, ref InstanceRef, req *CertificateRequest) ([]string, *CertificateFiles, error) {
	token := newToken()
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		c, err := getCompute(ctx, tx, ref.FleetID, ref.InstanceID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && c.Status != api.ComputeStatusPending) {
			return ErrUnknownInstance
		}
		if err != nil {
			return err
		}
		if err := deleteTokens(ctx, tx, ref.FleetID, ref.InstanceID); err != nil {
			return err
		}
		return putToken(ctx, tx, token, ref.FleetID, ref.InstanceID, zeroTime)
	})
	if err != nil {
		return nil, nil, err
	}
	env := s.processEnv(ref, token)
	if req == nil {
		return env, nil, nil
	}
	files, err := s.hostCertificate(req.Locations, req.IPAddress, req.DNSName)
	if err != nil {
		return nil, nil, fmt.Errorf("the instance's certificate: %w", err)
	}
	return env, files, nil
}

// deleteTokens removes a compute's auth tokens.
func deleteTokens(ctx context.Context, tx store.Tx, fleetID, name string) error {
	q := store.Query{Kind: hosting.KindComputeAuthToken, Parent: computeID(fleetID, name), HasParent: true}
	var ids []string
	if err := store.Each(ctx, tx, q, func(r store.Record) error { ids = append(ids, r.ID); return nil }); err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.Delete(ctx, hosting.KindComputeAuthToken, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}
