package builds

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/builds/s3"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

func goodArchive(t testing.TB) []byte {
	return makeZip(t,
		zent{name: "bin/server", body: "#!/bin/sh\nexit 0\n", mode: 0o755},
		zent{name: "data/map.txt", body: "map"},
	)
}

func TestCreateBuildAwaitingUpload(t *testing.T) {
	h := newHarness(t)
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, Name: api.String("game"), Version: api.String("1.0")})
	if err != nil {
		t.Fatal(err)
	}
	b := out.Build
	id := "build-00000000-0000-4000-8000-000000000001"
	want := map[string]string{
		"BuildId":          id,
		"BuildArn":         "arn:aws:gamelift:us-west-2:123456789012:build/" + id,
		"Name":             "game",
		"Version":          "1.0",
		"Status":           "INITIALIZED",
		"OperatingSystem":  "AMAZON_LINUX_2023",
		"ServerSdkVersion": "4.0.2",
		"Bucket":           "hoist-builds-us-west-2",
		"Key":              "builds/" + id + ".zip",
	}
	got := map[string]string{
		"BuildId": api.ToString(b.BuildId), "BuildArn": api.ToString(b.BuildArn), "Name": api.ToString(b.Name),
		"Version": api.ToString(b.Version), "Status": string(b.Status), "OperatingSystem": string(b.OperatingSystem),
		"ServerSdkVersion": api.ToString(b.ServerSdkVersion),
		"Bucket":           api.ToString(out.StorageLocation.Bucket), "Key": api.ToString(out.StorageLocation.Key),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if b.SizeOnDisk == nil || *b.SizeOnDisk != 0 || !b.CreationTime.Equal(h.clock.Now()) {
		t.Errorf("SizeOnDisk %v, CreationTime %v", b.SizeOnDisk, b.CreationTime)
	}
	c := out.UploadCredentials
	if !strings.HasPrefix(api.ToString(c.AccessKeyId), "ASIA") || len(*c.AccessKeyId) != 20 || len(api.ToString(c.SecretAccessKey)) != 40 || api.ToString(c.SessionToken) == "" {
		t.Errorf("credentials %+v", c)
	}
	d, err := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: b.BuildArn})
	if err != nil || api.ToString(d.Build.BuildId) != id || d.Build.Status != api.BuildStatusInitialized {
		t.Fatalf("DescribeBuild by ARN: %+v, %v", d, err)
	}
}

// TestCreateBuildNeedsOperatingSystem: GameLift documents no default for
// OperatingSystem; Hoist used AMAZON_LINUX_2023 before.
func TestCreateBuildNeedsOperatingSystem(t *testing.T) {
	h := newHarness(t)
	if _, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{Name: api.String("game")}); !isInvalidRequest(err) {
		t.Fatalf("CreateBuild without OperatingSystem: %v, want InvalidRequestException", err)
	}
	list, _ := h.ListBuilds(h.ctx, &api.ListBuildsInput{})
	if len(list.Builds) != 0 {
		t.Errorf("a refused CreateBuild left %d builds", len(list.Builds))
	}
}

func TestUploadCredentials(t *testing.T) {
	h := newHarness(t)
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	c1 := out.UploadCredentials
	re, err := h.RequestUploadCredentials(h.ctx, &api.RequestUploadCredentialsInput{BuildId: out.Build.BuildId})
	if err != nil {
		t.Fatal(err)
	}
	c2 := re.UploadCredentials
	if *c1.AccessKeyId == *c2.AccessKeyId || *re.StorageLocation.Key != *out.StorageLocation.Key {
		t.Fatalf("re-issued %+v at %+v", c2, re.StorageLocation)
	}
	tests := map[string]struct {
		akid, token string
		advance     time.Duration
		wantSecret  string
		wantErr     string
	}{
		"first":         {akid: *c1.AccessKeyId, token: *c1.SessionToken, wantSecret: *c1.SecretAccessKey},
		"second":        {akid: *c2.AccessKeyId, token: *c2.SessionToken, wantSecret: *c2.SecretAccessKey},
		"swapped token": {akid: *c1.AccessKeyId, token: *c2.SessionToken, wantErr: "InvalidToken"},
		"no token":      {akid: *c1.AccessKeyId, wantErr: "InvalidToken"},
		"unknown":       {akid: "ASIAUNKNOWN", token: *c1.SessionToken, wantErr: "not an upload access key"},
		"expired":       {akid: *c2.AccessKeyId, token: *c2.SessionToken, advance: DefaultCredentialsTTL, wantErr: "ExpiredToken"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h.clock.Advance(tc.advance)
			defer h.clock.Advance(-tc.advance)
			c, secret, err := h.lookupCredentials(h.ctx, tc.akid, tc.token)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || secret != tc.wantSecret || c.BuildID != *out.Build.BuildId {
				t.Fatalf("got %+v %q %v", c, secret, err)
			}
		})
	}
	// Nothing secret is stored in clear.
	_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
		recs, _, _ := tx.List(h.ctx, store.Query{Kind: KindUploadCredentials})
		for _, r := range recs {
			for _, secret := range []string{*c1.SecretAccessKey, *c1.SessionToken, *c2.SecretAccessKey, *c2.SessionToken} {
				if strings.Contains(string(r.Data), secret) {
					t.Errorf("credential record %s holds a secret in clear", r.ID)
				}
			}
		}
		return nil
	})
}

func TestUploadUnpacksToReady(t *testing.T) {
	h := newHarness(t)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	id := *out.Build.BuildId
	if err := h.deliver(t, *out.StorageLocation.Key, goodArchive(t)); err != nil {
		t.Fatal(err)
	}
	d, _ := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: &id})
	if d.Build.Status != api.BuildStatusReady || *d.Build.SizeOnDisk != int64(len("#!/bin/sh\nexit 0\n")+3) {
		t.Fatalf("build %+v", d.Build)
	}
	dir, err := h.BuildDir(h.ctx, id)
	if err != nil || dir != filepath.Join(h.dataDir, "builds", id) {
		t.Fatalf("BuildDir = %q, %v", dir, err)
	}
	st, err := os.Stat(filepath.Join(dir, "bin", "server"))
	if err != nil || st.Mode()&0o100 == 0 {
		t.Fatalf("server binary: %v %v", st, err)
	}
	// The archive blob is gone, the credentials too, and no more uploads.
	if names, _ := h.blobs.list(); len(names) != 0 {
		t.Errorf("blobs left: %v", names)
	}
	if _, _, err := h.lookupCredentials(h.ctx, *out.UploadCredentials.AccessKeyId, *out.UploadCredentials.SessionToken); !errors.Is(err, errUnknownKey) {
		t.Errorf("credentials still valid: %v", err)
	}
	err = h.deliver(t, *out.StorageLocation.Key, goodArchive(t))
	if se := (*s3.Error)(nil); !errors.As(err, &se) || se.Code != "AccessDenied" {
		t.Errorf("second upload: %v", err)
	}
	if _, err := h.RequestUploadCredentials(h.ctx, &api.RequestUploadCredentialsInput{BuildId: &id}); !isInvalidRequest(err) {
		t.Errorf("RequestUploadCredentials on READY: %v", err)
	}
	// Fleets read the record as an api.Build.
	_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
		b, err := h.Build(h.ctx, tx, id)
		if err != nil || b.Status != api.BuildStatusReady {
			t.Errorf("Build: %+v %v", b, err)
		}
		return nil
	})
}

func TestBadArchiveFails(t *testing.T) {
	h := newHarness(t)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	id := *out.Build.BuildId
	err := h.deliver(t, *out.StorageLocation.Key, makeZip(t, zent{name: "../../etc/evil", body: "x"}))
	var se *s3.Error
	if !errors.As(err, &se) || se.Code != "InvalidBuildArchive" || !strings.Contains(se.Message, `".."`) {
		t.Fatalf("upload answered %v", err)
	}
	var r *Record
	_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
		r, err = Get(h.ctx, tx, id)
		return err
	})
	if r.Status != api.BuildStatusFailed || !strings.Contains(r.StatusReason, `".."`) {
		t.Fatalf("record %+v", r)
	}
	if _, err := h.BuildDir(h.ctx, id); !isInvalidRequest(err) {
		t.Errorf("BuildDir of a FAILED build: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(h.dataDir, "builds")); len(ents) != 1 { // .tmp only
		t.Errorf("builds dir holds %v", ents)
	}
}

func isInvalidRequest(err error) bool {
	var e *api.InvalidRequestException
	return errors.As(err, &e)
}

func isNotFound(err error) bool {
	var e *api.NotFoundException
	return errors.As(err, &e)
}

func TestCreateBuildFromStorageLocation(t *testing.T) {
	h := newHarness(t)
	if err := h.deliver(t, "mine/game-v1.zip", goodArchive(t)); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		loc     api.S3Location
		wantErr bool
	}{
		"uploaded object": {loc: api.S3Location{Bucket: api.String("hoist-builds-us-west-2"), Key: api.String("mine/game-v1.zip"), RoleArn: api.String("arn:aws:iam::123456789012:role/x")}},
		"other bucket":    {loc: api.S3Location{Bucket: api.String("my-bucket"), Key: api.String("mine/game-v1.zip")}, wantErr: true},
		"missing key":     {loc: api.S3Location{Bucket: api.String("hoist-builds-us-west-2"), Key: api.String("nope.zip")}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, StorageLocation: &tc.loc})
			if tc.wantErr {
				if !isInvalidRequest(err) {
					t.Fatalf("err = %v, want InvalidRequestException", err)
				}
				return
			}
			if err != nil || out.UploadCredentials != nil || out.Build.Status != api.BuildStatusInitialized {
				t.Fatalf("CreateBuild: %+v %v", out, err)
			}
			h.Close() // waits for the unpack
			d, _ := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: out.Build.BuildId})
			if d.Build.Status != api.BuildStatusReady {
				t.Fatalf("status %s", d.Build.Status)
			}
			if d.Build.SizeOnDisk == nil || *d.Build.SizeOnDisk != 0 {
				t.Errorf("SizeOnDisk = %v; GameLift reports 0 for a build from a StorageLocation", d.Build.SizeOnDisk)
			}
		})
	}
	// The source object stays for more builds.
	loc := tests["uploaded object"].loc
	if _, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, StorageLocation: &loc}); err != nil {
		t.Fatal(err)
	}
	h.Close()
}

func TestListBuilds(t *testing.T) {
	h := newHarness(t)
	var ids []string
	for i := range 5 {
		out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *out.Build.BuildId)
		if i%2 == 0 {
			if err := h.deliver(t, *out.StorageLocation.Key, goodArchive(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := map[string]struct {
		status api.BuildStatus
		want   []string
	}{
		"all":         {want: ids},
		"ready":       {status: api.BuildStatusReady, want: []string{ids[0], ids[2], ids[4]}},
		"initialized": {status: api.BuildStatusInitialized, want: []string{ids[1], ids[3]}},
		"failed":      {status: api.BuildStatusFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			in := &api.ListBuildsInput{Status: tc.status, Limit: api.Int32(2)}
			for pages := 0; ; pages++ {
				out, err := h.ListBuilds(h.ctx, in)
				if err != nil || pages > 5 {
					t.Fatal(err)
				}
				for _, b := range out.Builds {
					got = append(got, *b.BuildId)
				}
				if out.NextToken == nil {
					break
				}
				in.NextToken = out.NextToken
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := h.ListBuilds(h.ctx, &api.ListBuildsInput{NextToken: api.String("bogus")}); !isInvalidRequest(err) {
		t.Errorf("bad NextToken: %v", err)
	}
}

func TestUpdateAndDeleteBuild(t *testing.T) {
	h := newHarness(t)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, Name: api.String("a"), Version: api.String("1")})
	id := out.Build.BuildId
	u, err := h.UpdateBuild(h.ctx, &api.UpdateBuildInput{BuildId: id, Version: api.String("2")})
	if err != nil || *u.Build.Name != "a" || *u.Build.Version != "2" {
		t.Fatalf("UpdateBuild: %+v %v", u, err)
	}
	if err := h.deliver(t, *out.StorageLocation.Key, goodArchive(t)); err != nil {
		t.Fatal(err)
	}
	dir, _ := h.BuildDir(h.ctx, *id)
	if err := h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("build dir still there: %v", err)
	}
	for name, call := range map[string]func() error{
		"describe": func() error { _, err := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: id}); return err },
		"update":   func() error { _, err := h.UpdateBuild(h.ctx, &api.UpdateBuildInput{BuildId: id}); return err },
		"delete":   func() error { return h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: id}) },
		"creds": func() error {
			_, err := h.RequestUploadCredentials(h.ctx, &api.RequestUploadCredentialsInput{BuildId: id})
			return err
		},
		"dir": func() error { _, err := h.BuildDir(h.ctx, *id); return err },
	} {
		if err := call(); !isNotFound(err) {
			t.Errorf("%s after delete: %v", name, err)
		}
	}
}

func TestRecover(t *testing.T) {
	h := newHarness(t)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	id := *out.Build.BuildId
	// An archive recorded as received but never unpacked (a crash), and a
	// blob no record names.
	w, _ := h.blobs.create()
	w.Write(goodArchive(t))
	w.commit()
	orphan, _ := h.blobs.create() // left by an earlier run
	orphan.commit()
	old := h.started.Add(-time.Hour)
	os.Chtimes(h.blobs.path(orphan.name), old, old)
	inFlight, _ := h.blobs.create() // an upload this run is receiving
	defer inFlight.abort()
	err := h.cfg.Store.Update(h.ctx, func(tx store.Tx) error {
		return receiveArchive(h.ctx, tx, id, w.name, h.now())
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Recover(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.Close()
	d, _ := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: &id})
	if d.Build.Status != api.BuildStatusReady {
		t.Fatalf("status %s", d.Build.Status)
	}
	if names, _ := h.blobs.list(); len(names) != 1 || names[0] != inFlight.name {
		t.Errorf("blobs left: %v, want only the upload in flight %s", names, inFlight.name)
	}
}

// TestRecordFormat pins the JSON fleets read: the api.Build's wire fields
// at the top level.
func TestRecordFormat(t *testing.T) {
	h := newHarness(t)
	out, _ := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, Name: api.String("n")})
	_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
		rec, err := tx.Get(h.ctx, hosting.KindBuild, *out.Build.BuildId)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"BuildId":"build-`, `"Status":"INITIALIZED"`, `"Name":"n"`, `"CreationTime":1`, `"hoistStorageKey":"builds/build-`} {
			if !strings.Contains(string(rec.Data), want) {
				t.Errorf("record %s lacks %s", rec.Data, want)
			}
		}
		if rec.Key != "INITIALIZED" {
			t.Errorf("record key %q", rec.Key)
		}
		return nil
	})
}

// TestTagsAndARN checks the ARN made from Region and Account, and the hooks
// the wiring plugs internal/tags into: tags are written in CreateBuild's
// transaction and removed with the build.
func TestTagsAndARN(t *testing.T) {
	const kindTag store.Kind = "TestTag"
	h := newHarness(t, func(c *Config) {
		c.Region, c.Account = "eu-west-1", "111122223333"
		c.SetTags = func(ctx context.Context, tx store.Tx, arn string, tags []api.Tag) error {
			for _, tag := range tags {
				if err := tx.Put(ctx, store.Record{Kind: kindTag, ID: arn + "#" + *tag.Key, Parent: arn, Data: []byte(`"` + *tag.Value + `"`)}); err != nil {
					return err
				}
			}
			return nil
		}
		c.RemoveTags = func(ctx context.Context, tx store.Tx, arn string) error {
			_, err := deleteChildren(ctx, tx, kindTag, arn)
			return err
		}
	})
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023, Tags: []api.Tag{{Key: api.String("team"), Value: api.String("core")}}})
	if err != nil {
		t.Fatal(err)
	}
	arn := *out.Build.BuildArn
	if arn != "arn:aws:gamelift:eu-west-1:111122223333:build/"+*out.Build.BuildId {
		t.Fatalf("ARN %q", arn)
	}
	tags := func() int {
		var n int
		_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
			n, err = tx.Count(h.ctx, store.Query{Kind: kindTag, Parent: arn, HasParent: true})
			return err
		})
		return n
	}
	exists := func() bool {
		var ok bool
		_ = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
			ok, err = h.Exists(h.ctx, tx, arn)
			return err
		})
		return ok
	}
	if tags() != 1 || !exists() {
		t.Fatalf("after create: %d tags, exists %v", tags(), exists())
	}
	if err := h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: &arn}); err != nil {
		t.Fatal(err)
	}
	if tags() != 0 || exists() {
		t.Fatalf("after delete: %d tags, exists %v", tags(), exists())
	}
}
