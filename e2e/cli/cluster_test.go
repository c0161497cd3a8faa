package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/e2e/cluster"
	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/internal/store/postgres/pgtest"
)

// TestOnCluster runs the boto3 scenarios again, each against three Hoist
// replicas on one PostgreSQL schema (e2e/cluster) behind a load balancer
// that sends each request to the next replica (a script's keep-alive
// connection included), so that every scenario's calls are spread over
// the three. Skipped without HOIST_TEST_DATABASE_URL; each scenario skips
// as it does alone without boto3. The aws CLI's scripts call the same
// operations as the boto3 ones, a process start per call (fleetiq_cli.sh
// takes 20 s, and passes on a cluster too); hosting_cli.sh is left out:
// its fleet's instances run on the machine of the replica that launches
// them (the local hosting), which a test of replicas sharing one machine
// turns off.
func TestOnCluster(t *testing.T) {
	if _, ok := os.LookupEnv(pgtest.Env); !ok {
		t.Skip(pgtest.Skipped)
	}
	t.Run("TestFleetIQBoto3", TestFleetIQBoto3)
	t.Run("TestAliasesBoto3", TestAliasesBoto3)
	t.Run("TestMatchmakingBoto3", TestMatchmakingBoto3)
	// Its game servers connect through the balancer to any replica; the
	// placements' CreateGameSession messages reach them wherever they are.
	t.Run("TestPlacementBoto3", TestPlacementBoto3)
}

// onCluster reports whether t runs under TestOnCluster.
func onCluster(t *testing.T) bool {
	return strings.HasPrefix(t.Name(), "TestOnCluster/")
}

// startCluster starts three replicas with args and a round-robin
// balancer in front of them, and returns a Hoist that stands for them
// (hoisttest.Front).
func startCluster(t *testing.T, args []string) *hoisttest.Hoist {
	t.Helper()
	c := cluster.Start(t, cluster.Options{Args: args})
	return hoisttest.Front(c.Balancer(), c.Logs)
}
