package builds

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/store"
)

const defaultLimit = 100

// CreateBuild creates an INITIALIZED build; OperatingSystem is required, as
// on GameLift. Without a StorageLocation it returns upload credentials and
// the location in Hoist's bucket to upload the archive to; with one (an
// object already uploaded to Hoist's bucket) the object is taken as the
// archive and unpacked in the background, and the build's SizeOnDisk stays
// 0, as GameLift reports for builds from a StorageLocation.
func (s *Service) CreateBuild(ctx context.Context, in *api.CreateBuildInput) (*api.CreateBuildOutput, error) {
	if in.OperatingSystem == "" {
		// GameLift: "You must specify a valid operating system in this
		// request. There is no default value."
		return nil, api.NewInvalidRequestException("OperatingSystem is required: GameLift has no default (for example AMAZON_LINUX_2023)")
	}
	id := "build-" + s.cfg.NewID()
	r := s.newRecord(id, in)
	var src *objectRecord
	if loc := in.StorageLocation; loc != nil {
		var err error
		if src, err = s.sourceObject(ctx, loc); err != nil {
			return nil, err
		}
		if r.Archive, err = s.blobs.link(src.Blob); err != nil {
			return nil, fmt.Errorf("take object %s: %w", src.Key, err)
		}
		r.Received, r.FromObject = s.now(), true
	}
	var creds issuedCredentials
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		if err := putBuild(ctx, tx, r); err != nil {
			return err
		}
		if err := s.setTags(ctx, tx, *r.BuildArn, in.Tags); err != nil {
			return err
		}
		if src != nil {
			return nil
		}
		var err error
		creds, err = s.issueCredentials(ctx, tx, r)
		return err
	})
	if err != nil {
		s.blobs.remove(r.Archive)
		return nil, err
	}
	out := &api.CreateBuildOutput{Build: &r.Build}
	if src != nil {
		out.StorageLocation = in.StorageLocation
		s.startUnpack(id)
		s.log.Info("build created from an uploaded object", "build", id, "key", src.Key)
		return out, nil
	}
	out.UploadCredentials = creds.api()
	out.StorageLocation = s.location(r)
	s.log.Info("build created; awaiting upload", "build", id, "s3_endpoint", s.cfg.PublicURL, "bucket", s.bucket, "key", r.StorageKey)
	return out, nil
}

func (s *Service) newRecord(id string, in *api.CreateBuildInput) *Record {
	sdk := in.ServerSdkVersion
	if sdk == nil {
		sdk = api.String(DefaultServerSdkVersion)
	}
	return &Record{
		Build: api.Build{
			BuildId:          api.String(id),
			BuildArn:         api.String(s.buildARN(id)),
			Name:             in.Name,
			Version:          in.Version,
			OperatingSystem:  in.OperatingSystem,
			ServerSdkVersion: sdk,
			Status:           api.BuildStatusInitialized,
			SizeOnDisk:       api.Int64(0),
			CreationTime:     api.Time(s.now()),
		},
		StorageKey: storageKey(id),
		Host:       s.cfg.ReplicaID,
	}
}

// sourceObject finds the object a CreateBuild StorageLocation names.
func (s *Service) sourceObject(ctx context.Context, loc *api.S3Location) (*objectRecord, error) {
	bucket, key := api.ToString(loc.Bucket), api.ToString(loc.Key)
	if bucket != s.bucket {
		return nil, api.NewInvalidRequestException("StorageLocation.Bucket %q: Hoist takes builds only from its own bucket %q (upload the archive there first)", bucket, s.bucket)
	}
	var o objectRecord
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, KindUploadObject, key, &o)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, api.NewInvalidRequestException("StorageLocation: no object %q in bucket %q", key, bucket)
	case err != nil:
		return nil, err
	case o.Host != s.cfg.ReplicaID:
		return nil, api.NewInvalidRequestException("StorageLocation: object %q was uploaded to Hoist replica %q; create the build there", key, o.Host)
	}
	return &o, nil
}

func (s *Service) location(r *Record) *api.S3Location {
	return &api.S3Location{Bucket: api.String(s.bucket), Key: api.String(r.StorageKey)}
}

// DescribeBuild returns a build.
func (s *Service) DescribeBuild(ctx context.Context, in *api.DescribeBuildInput) (*api.DescribeBuildOutput, error) {
	r, err := s.get(ctx, api.ToString(in.BuildId))
	if err != nil {
		return nil, err
	}
	return &api.DescribeBuildOutput{Build: &r.Build}, nil
}

func (s *Service) get(ctx context.Context, id string) (*Record, error) {
	var r *Record
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = Get(ctx, tx, id)
		return err
	})
	return r, err
}

// ListBuilds lists builds in creation order, optionally of one status.
func (s *Service) ListBuilds(ctx context.Context, in *api.ListBuildsInput) (*api.ListBuildsOutput, error) {
	q := store.Query{Kind: hosting.KindBuild, Order: store.OrderCreated}
	limit := defaultLimit
	if in.Limit != nil && *in.Limit > 0 {
		limit = int(*in.Limit)
	}
	if in.Status != "" {
		q.Key, q.HasKey = string(in.Status), true
	}
	out := &api.ListBuildsOutput{Builds: []api.Build{}}
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		recs, next, err := paging.Records(ctx, tx, q, api.ToString(in.NextToken), limit, nil)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			var r Record
			if err := store.Decode(rec, &r); err != nil {
				return err
			}
			out.Builds = append(out.Builds, r.Build)
		}
		out.NextToken = paging.Token(next)
		return nil
	})
	return out, err
}

// UpdateBuild changes a build's Name and Version.
func (s *Service) UpdateBuild(ctx context.Context, in *api.UpdateBuildInput) (*api.UpdateBuildOutput, error) {
	var r *Record
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if r, err = Get(ctx, tx, api.ToString(in.BuildId)); err != nil {
			return err
		}
		if in.Name != nil {
			r.Name = in.Name
		}
		if in.Version != nil {
			r.Version = in.Version
		}
		return putBuild(ctx, tx, r)
	})
	if err != nil {
		return nil, err
	}
	return &api.UpdateBuildOutput{Build: &r.Build}, nil
}

// RequestUploadCredentials issues fresh upload credentials for a build
// that is still waiting for its archive.
func (s *Service) RequestUploadCredentials(ctx context.Context, in *api.RequestUploadCredentialsInput) (*api.RequestUploadCredentialsOutput, error) {
	var r *Record
	var creds issuedCredentials
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if r, err = Get(ctx, tx, api.ToString(in.BuildId)); err != nil {
			return err
		}
		if r.Status != api.BuildStatusInitialized || !r.Received.IsZero() {
			return api.NewInvalidRequestException("Build %s already has its archive (status %s); upload credentials are issued only while a build waits for its upload", *r.BuildId, r.Status)
		}
		creds, err = s.issueCredentials(ctx, tx, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.RequestUploadCredentialsOutput{UploadCredentials: creds.api(), StorageLocation: s.location(r)}, nil
}

// DeleteBuild deletes a build, its upload credentials, its unfinished
// uploads, its tags and its files. Fleets created from the build are not
// affected: while any of them (not DELETING or TERMINATED) remains, the
// files are kept for the instances they launch (KindRetainedBuild), and
// removed once the last is gone (releaseRetained).
func (s *Service) DeleteBuild(ctx context.Context, in *api.DeleteBuildInput) error {
	var r *Record
	var blobs []string
	var kept bool
	err := s.cfg.Store.Update(ctx, func(tx store.Tx) error {
		var err error
		if r, err = Get(ctx, tx, api.ToString(in.BuildId)); err != nil {
			return err
		}
		if err := tx.Delete(ctx, hosting.KindBuild, *r.BuildId); err != nil {
			return err
		}
		if kept, err = retainIfUsed(ctx, tx, r); err != nil {
			return err
		}
		if _, err := deleteChildren(ctx, tx, KindUploadCredentials, *r.BuildId); err != nil {
			return err
		}
		if blobs, err = abortUploadsOf(ctx, tx, r.StorageKey); err != nil {
			return err
		}
		return s.deleteTags(ctx, tx, *r.BuildArn)
	})
	if err != nil {
		return err
	}
	if r.Host != s.cfg.ReplicaID {
		s.log.Warn("deleted build's files are on another replica; remove them there", "build", *r.BuildId, "host", r.Host)
		return nil
	}
	s.blobs.remove(append(blobs, r.Archive)...)
	if kept {
		s.log.Info("build deleted; its files are kept while fleets use them", "build", *r.BuildId)
		return nil
	}
	s.removeBuildDir(*r.BuildId)
	s.log.Info("build deleted", "build", *r.BuildId)
	return nil
}

// abortUploadsOf deletes the multipart uploads of a key and their parts,
// returning the blobs to remove after the transaction.
func abortUploadsOf(ctx context.Context, tx store.Tx, key string) ([]string, error) {
	ups, err := deleteChildren(ctx, tx, KindMultipartUpload, key)
	if err != nil {
		return nil, err
	}
	var blobs []string
	for _, u := range ups {
		b, err := deleteParts(ctx, tx, u.ID)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, b...)
	}
	return blobs, nil
}

// deleteParts deletes an upload's part records and returns their blobs.
func deleteParts(ctx context.Context, tx store.Tx, uploadID string) ([]string, error) {
	parts, err := deleteChildren(ctx, tx, KindUploadPart, uploadID)
	if err != nil {
		return nil, err
	}
	var blobs []string
	for _, p := range parts {
		var pr partRecord
		if store.Decode(p, &pr) == nil {
			blobs = append(blobs, pr.Blob)
		}
	}
	return blobs, nil
}

// Build returns a build as DescribeBuild reports it, read in tx (fleets
// check the build in the transaction that creates a fleet), or an
// *api.NotFoundException. Get returns the whole record, with the reason a
// FAILED build failed.
func (s *Service) Build(ctx context.Context, tx store.Tx, buildID string) (api.Build, error) {
	r, err := Get(ctx, tx, buildID)
	if err != nil {
		return api.Build{}, err
	}
	return r.Build, nil
}

// BuildDir returns the directory holding a READY build's files on this
// replica, also after DeleteBuild while fleets use the build (see
// FleetBuild). Instances must copy (or hard-link) what they need: the
// directory goes once the build is deleted and no fleet uses it.
func (s *Service) BuildDir(ctx context.Context, buildID string) (string, error) {
	r, err := s.readyRecord(ctx, buildID)
	if err != nil {
		return "", err
	}
	if r.Host != s.cfg.ReplicaID {
		if s.cfg.PeerURL == nil || len(s.cfg.ClusterKey) == 0 {
			return "", fmt.Errorf("build %s is held by Hoist replica %q, not this one", buildID, r.Host)
		}
		return s.fetchBuild(ctx, r)
	}
	return r.Dir, nil
}

// localBuildDir is BuildDir for a build this replica holds (what it
// serves to other replicas: never a copy it fetched itself).
func (s *Service) localBuildDir(ctx context.Context, buildID string) (string, error) {
	r, err := s.readyRecord(ctx, buildID)
	if err != nil {
		return "", err
	}
	if r.Host != s.cfg.ReplicaID {
		return "", fmt.Errorf("build %s is held by Hoist replica %q, not this one", buildID, r.Host)
	}
	return r.Dir, nil
}

// readyRecord reads a READY build's record, also one retained after
// DeleteBuild.
func (s *Service) readyRecord(ctx context.Context, buildID string) (*Record, error) {
	var r *Record
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		var err error
		r, err = Get(ctx, tx, buildID)
		var nf *api.NotFoundException
		if errors.As(err, &nf) {
			if rr, rerr := retained(ctx, tx, buildIDOf(buildID)); rerr == nil {
				r, err = rr, nil
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Status != api.BuildStatusReady {
		return nil, api.NewInvalidRequestException("Build %s is %s, not READY", buildID, r.Status)
	}
	return r, nil
}
