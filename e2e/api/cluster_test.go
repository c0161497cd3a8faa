package api_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// allOnCluster makes TestOnCluster run every scenario of
// clusterScenarios, not only those marked for the default run.
var allOnCluster = flag.Bool("on-cluster.all", false, "TestOnCluster: run every scenario that runs on a cluster, not only the representative set")

// clusterScenarios are the scenarios TestOnCluster runs again against a
// cluster: by default the representative set (every operation, paging
// across replicas, aliases, queues, FlexMatch, both wire protocols,
// signatures, validation), with -on-cluster.all every one of the list
// (each passes there).
var clusterScenarios = []struct {
	name           string
	f              func(*testing.T)
	representative bool
}{
	{"TestEveryOperation", TestEveryOperation, true},
	{"TestEveryOperationOnResources", TestEveryOperationOnResources, true},
	{"TestAliasLifecycle", TestAliasLifecycle, true},
	{"TestListAliases", TestListAliases, false},
	{"TestAliasTags", TestAliasTags, false},
	{"TestAliasOfDeletedFleet", TestAliasOfDeletedFleet, false},
	{"TestNextTokens", TestNextTokens, true},
	{"TestGameSessionQueueBounds", TestGameSessionQueueBounds, true},
	{"TestMatchmakingRuleSets", TestMatchmakingRuleSets, false},
	{"TestMatchmakingConfigurations", TestMatchmakingConfigurations, false},
	{"TestMatchmakingConfigurationRefusals", TestMatchmakingConfigurationRefusals, false},
	{"TestMatchmakingAcceptanceTimeoutDefault", TestMatchmakingAcceptanceTimeoutDefault, false},
	{"TestMatchmakingConfigurationPages", TestMatchmakingConfigurationPages, false},
	{"TestMatchmakingConfigurationsV1", TestMatchmakingConfigurationsV1, false},
	{"TestMatchmakingEndEvents", TestMatchmakingEndEvents, false},
	{"TestMatchmakingStandalone1v1", TestMatchmakingStandalone1v1, true},
	{"TestMatchmakingStandalone5v5", TestMatchmakingStandalone5v5, false},
	{"TestMatchmakingAcceptance", TestMatchmakingAcceptance, true},
	{"TestMatchmakingTimeoutAndStop", TestMatchmakingTimeoutAndStop, false},
	{"TestMatchmakingBackfillStandalone", TestMatchmakingBackfillStandalone, true},
	{"TestMatchmakingTicketBytesBound", TestMatchmakingTicketBytesBound, false},
	{"TestNonFiniteThroughSDK", TestNonFiniteThroughSDK, false},
	{"TestValidationThroughTheWire", TestValidationThroughTheWire, true},
	{"TestValidationAcceptsSeedAndARN", TestValidationAcceptsSeedAndARN, false},
	{"TestValidationRaw", TestValidationRaw, false},
	{"TestWireSuccessJSON", TestWireSuccessJSON, true},
	{"TestWireSuccessCBOR", TestWireSuccessCBOR, true},
	{"TestWireProtocolErrors", TestWireProtocolErrors, false},
	{"TestWireAuthentication", TestWireAuthentication, true},
	{"TestOperationBodyLimit", TestOperationBodyLimit, false},
}

// TestOnCluster runs the package's scenarios again, each against three
// Hoist replicas on one PostgreSQL schema (e2e/cluster) behind a load
// balancer that sends each request to the next replica, so that every
// scenario's calls are spread over the three. Skipped without
// HOIST_TEST_DATABASE_URL.
func TestOnCluster(t *testing.T) {
	if _, ok := os.LookupEnv(pgtest.Env); !ok {
		t.Skip(pgtest.Skipped)
	}
	for _, sc := range clusterScenarios {
		if sc.representative || *allOnCluster {
			t.Run(sc.name, sc.f)
		}
	}
}

// onCluster reports whether t runs under TestOnCluster.
func onCluster(t *testing.T) bool {
	return strings.HasPrefix(t.Name(), "TestOnCluster/")
}

// startCluster starts three replicas and a round-robin balancer in front
// of them, and returns a Hoist that stands for them (hoisttest.Front).
func startCluster(t *testing.T) *hoisttest.Hoist {
	t.Helper()
	c := cluster.Start(t, cluster.Options{})
	return hoisttest.Front(c.Balancer(), c.Logs)
}
