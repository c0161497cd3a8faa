package builds

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

// Defaults.
const (
	DefaultMaxArchiveSize  int64 = 5 << 30
	DefaultMaxUnpackedSize int64 = 20 << 30
	DefaultMaxEntries            = 200_000
	DefaultMaxOpenUploads        = 10
	DefaultCredentialsTTL        = 6 * time.Hour
	DefaultProcessWait           = 30 * time.Second
	DefaultUploadRetention       = 7 * 24 * time.Hour
	// DefaultServerSdkVersion is GameLift's default for CreateBuild.
	DefaultServerSdkVersion = "4.0.2"
)

// Limits bound uploads and archives. Zero fields take the defaults.
type Limits struct {
	// MaxArchiveSize caps one uploaded object (a build archive), whether
	// sent in one PutObject or in parts. Default 5 GiB.
	MaxArchiveSize int64
	// MaxUnpackedSize caps the total size of the files an archive unpacks
	// to. Default 20 GiB.
	MaxUnpackedSize int64
	// MaxEntries caps the entries of an archive. Default 200,000.
	MaxEntries int
	// MaxOpenUploads caps the unfinished multipart uploads of one key (a
	// build's archive, or an object of the operator's). Default 10.
	MaxOpenUploads int
}

func (l Limits) withDefaults() Limits {
	if l.MaxArchiveSize <= 0 {
		l.MaxArchiveSize = DefaultMaxArchiveSize
	}
	if l.MaxUnpackedSize <= 0 {
		l.MaxUnpackedSize = DefaultMaxUnpackedSize
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxOpenUploads <= 0 {
		l.MaxOpenUploads = DefaultMaxOpenUploads
	}
	return l
}

// Config configures a Service. Store and DataDir are required.
type Config struct {
	Store store.Store
	// DataDir is Hoist's data directory: unpacked builds go to
	// DataDir/builds/<build ID>, uploads to DataDir/uploads.
	DataDir string
	// Region names the bucket (hoist-builds-<Region>) and goes into ARNs.
	Region string
	// Account is the account ID in build ARNs
	// (arn:aws:gamelift:<Region>:<Account>:build/<id>). Default 123456789012.
	Account string
	// SetTags stores the tags given to CreateBuild (in its transaction);
	// RemoveTags forgets a deleted build's tags. Both optional (without
	// SetTags the tags are dropped).
	SetTags    func(ctx context.Context, tx store.Tx, arn string, tags []api.Tag) error
	RemoveTags func(ctx context.Context, tx store.Tx, arn string) error
	// PublicURL is Hoist's base URL as clients reach it (the S3 endpoint
	// for uploads); it is named in the CreateBuild log line.
	PublicURL string
	// Bucket overrides the bucket name. Default "hoist-builds-" + Region.
	Bucket string
	// Operators verifies S3 requests signed with a key that is not an
	// upload credential: Hoist's own access keys, the ones the GameLift
	// API accepts (internal/server passes the API's sigv4.Authenticator,
	// so this package never holds their secrets). A request it accepts
	// may upload to any key of the bucket; in unauthenticated mode it
	// accepts any key (loopback only). Nil refuses every such request.
	Operators OperatorVerifier
	// Limits on uploads and archives.
	Limits Limits
	// PeerURL returns the base URL of another replica of the cluster
	// (from the replica registry), and ClusterKey is the key replicas sign
	// their build requests with: with both, BuildDir fetches a build held
	// by another replica (PeerPath) and keeps a copy. Nil on one replica.
	PeerURL    func(ctx context.Context, replicaID string) (string, error)
	ClusterKey []byte
	// CredentialsTTL is how long issued upload credentials stay valid.
	// Default 6h.
	CredentialsTTL time.Duration
	// ProcessWait is how long the upload that completes a build's archive
	// waits for the archive to be unpacked before it is answered (so that
	// the build is READY, or the upload fails with the reason, by the time
	// the client sees it). Default 30s; unpacking goes on after it.
	ProcessWait time.Duration
	// UploadRetention is how long an unfinished multipart upload is kept.
	// Default 7 days.
	UploadRetention time.Duration
	// RetainedCheck is how often the files of deleted builds kept for
	// their fleets are checked, and removed once no fleet uses them.
	// Default DefaultRetainedCheck (1m).
	RetainedCheck time.Duration
	// ReplicaID names this Hoist replica (the Host of the files it holds).
	// Default "local".
	ReplicaID string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// NewID returns a fresh UUID for build IDs. Default: crypto/rand.
	NewID  func() string
	Logger *slog.Logger
}

// OperatorVerifier verifies an S3 request signed with one of Hoist's own
// access keys (SigV4, service s3). Errors are *sigv4.Error with S3's codes
// (InvalidAccessKeyId, SignatureDoesNotMatch, ...).
// (*sigv4.Authenticator).VerifyS3 implements it.
type OperatorVerifier interface {
	VerifyS3(r *http.Request) error
}

// Service implements the build operations of api.Service and the S3 upload
// endpoint (S3Handler).
type Service struct {
	cfg    Config
	lim    Limits
	log    *slog.Logger
	bucket string
	blobs  blobStore

	// started is when New ran (real time: it is compared with file times).
	started time.Time

	// work tracks archives being unpacked (Close waits for them).
	work    sync.WaitGroup
	mu      sync.Mutex
	running map[string]chan struct{} // build ID -> closed when its unpack ends
	fetchMu sync.Mutex               // one fetch of another replica's build at a time
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("builds: Config.Store is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("builds: Config.DataDir is required")
	}
	setDefaults(&cfg)
	s := &Service{
		cfg:     cfg,
		lim:     cfg.Limits.withDefaults(),
		log:     cfg.Logger,
		bucket:  cfg.Bucket,
		blobs:   blobStore{dir: filepath.Join(cfg.DataDir, "uploads", "blobs")},
		running: map[string]chan struct{}{},
		started: time.Now(),
	}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	return s, nil
}

func setDefaults(cfg *Config) {
	if cfg.Region == "" {
		cfg.Region = "us-west-2"
	}
	if cfg.Account == "" {
		cfg.Account = "123456789012"
	}
	if cfg.Bucket == "" {
		cfg.Bucket = "hoist-builds-" + cfg.Region
	}
	if cfg.CredentialsTTL <= 0 {
		cfg.CredentialsTTL = DefaultCredentialsTTL
	}
	if cfg.ProcessWait <= 0 {
		cfg.ProcessWait = DefaultProcessWait
	}
	if cfg.UploadRetention <= 0 {
		cfg.UploadRetention = DefaultUploadRetention
	}
	if cfg.RetainedCheck <= 0 {
		cfg.RetainedCheck = DefaultRetainedCheck
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "local"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
}

// Bucket returns the name of Hoist's build bucket: the S3 handler serves
// paths under "/" + Bucket() + "/".
func (s *Service) Bucket() string { return s.bucket }

// Limits returns the limits in force (the defaults filled in).
func (s *Service) Limits() Limits { return s.lim }

// Close waits for archives being unpacked to finish.
func (s *Service) Close() error {
	s.work.Wait()
	return nil
}

// now returns the current time truncated to milliseconds, the precision
// GameLift reports.
func (s *Service) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Millisecond)
}

func (s *Service) buildsDir() string { return filepath.Join(s.cfg.DataDir, "builds") }

// buildDir is where a build is unpacked.
func (s *Service) buildDir(id string) string { return filepath.Join(s.buildsDir(), id) }

// storageKey is the key of a build's archive in the bucket.
func storageKey(buildID string) string { return "builds/" + buildID + ".zip" }

// buildIDOf returns the build ID of a build ID or ARN.
func buildIDOf(idOrARN string) string {
	if i := strings.LastIndex(idOrARN, ":build/"); i >= 0 && strings.HasPrefix(idOrARN, "arn:") {
		return idOrARN[i+len(":build/"):]
	}
	return idOrARN
}
