package builds

import (
	"os"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// putFleet stores a fleet record of status st created from buildID, as
// internal/fleets writes it.
func (h *harness) putFleet(t *testing.T, id, buildID string, st api.FleetStatus) {
	t.Helper()
	f := hosting.Fleet{Attributes: api.FleetAttributes{FleetId: api.String(id), BuildId: api.String(buildID), Status: st}}
	err := h.cfg.Store.Update(h.ctx, func(tx store.Tx) error {
		return store.PutJSON(h.ctx, tx, store.Record{Kind: hosting.KindFleet, ID: id, Key: string(st)}, f)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readyBuild creates a build and unpacks goodArchive into it.
func (h *harness) readyBuild(t *testing.T) string {
	t.Helper()
	out, err := h.CreateBuild(h.ctx, &api.CreateBuildInput{OperatingSystem: api.OperatingSystemAmazonLinux2023})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.deliver(t, *out.StorageLocation.Key, goodArchive(t)); err != nil {
		t.Fatal(err)
	}
	return *out.Build.BuildId
}

// TestDeleteBuildKeepsFilesForFleets: a build deleted while a fleet uses
// it is gone for DescribeBuild and CreateFleet, but its files stay for the
// fleet's new instances until the fleet is DELETING; then they go. Before,
// DeleteBuild removed the files at once and the fleet could not launch
// another instance.
func TestDeleteBuildKeepsFilesForFleets(t *testing.T) {
	h := newHarness(t)
	id := h.readyBuild(t)
	dir, err := h.BuildDir(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	h.putFleet(t, "fleet-a", id, api.FleetStatusActive)
	h.putFleet(t, "fleet-gone", id, api.FleetStatusTerminated)
	if err := h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: &id}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.DescribeBuild(h.ctx, &api.DescribeBuildInput{BuildId: &id}); !isNotFound(err) {
		t.Errorf("DescribeBuild after DeleteBuild: %v, want NotFound", err)
	}
	err = h.cfg.Store.View(h.ctx, func(tx store.Tx) error {
		if _, err := h.Build(h.ctx, tx, id); !isNotFound(err) {
			t.Errorf("Build (CreateFleet's check) after DeleteBuild: %v, want NotFound", err)
		}
		b, err := h.FleetBuild(h.ctx, tx, id)
		if err != nil || b.Status != api.BuildStatusReady {
			t.Errorf("FleetBuild after DeleteBuild: %+v, %v; want READY", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.BuildDir(h.ctx, id); err != nil || got != dir {
		t.Fatalf("BuildDir after DeleteBuild = %q, %v; want %q", got, err, dir)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the build's files are gone while a fleet uses them: %v", err)
	}

	// Still used: a check keeps them.
	if err := h.releaseRetained(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("released while fleet-a is ACTIVE: %v", err)
	}
	// The last fleet is deleting: the next check removes them.
	h.putFleet(t, "fleet-a", id, api.FleetStatusDeleting)
	if err := h.releaseRetained(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the files stay after the last fleet went: %v", err)
	}
	if _, err := h.BuildDir(h.ctx, id); !isNotFound(err) {
		t.Errorf("BuildDir after release: %v, want NotFound", err)
	}
}

// TestDeleteUnusedBuildRemovesFiles: without fleets the files go at once.
func TestDeleteUnusedBuildRemovesFiles(t *testing.T) {
	h := newHarness(t)
	id := h.readyBuild(t)
	dir, _ := h.BuildDir(h.ctx, id)
	h.putFleet(t, "fleet-other", "build-other", api.FleetStatusActive)
	if err := h.DeleteBuild(h.ctx, &api.DeleteBuildInput{BuildId: &id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("an unused deleted build's files stay: %v", err)
	}
}
