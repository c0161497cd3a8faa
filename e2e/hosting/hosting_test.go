//go:build linux

package hosting

import "testing"

// TestManagedHosting runs the tests that can share one Hoist, in parallel.
func TestManagedHosting(t *testing.T) {
	e := startHoist(t)
	e.dumpOnFailure(t)
	tests := map[string]func(*testing.T, *env){
		"Flow":                testFlow,
		"GameSessionRules":    testGameSessionRules,
		"ConcurrentPlacement": testConcurrentPlacement,
		"Crash":               testCrash,
		"CrashAtStart":        testCrashAtStart,
		"KilledProcess":       testKilledProcess,
		"KilledActivating":    testKilledWhileActivating,
		"StuckProcess":        testStuckProcess,
		"MissedHeartbeats":    testMissedHeartbeats,
		"Unhealthy":           testUnhealthy,
		"ActivationTimeout":   testActivationTimeout,
		"InvalidLaunchPath":   testInvalidLaunchPath,
		"CorruptBuild":        testCorruptBuild,
		"ActOnSession":        testActOnSession,
		"BadToken":            testBadToken,
		"Certificates":        testCertificates,
		"ForceTLS":            testForceTLS,
		"Anywhere":            testAnywhere,
		"FleetOperations":     testFleetOperations,
		"FleetRules":          testFleetRules,
		"Scaling":             testScaling,
		"Builds":              testBuilds,
		"CLIUpload":           testCLIUpload,
		"DeletedBuild":        testDeletedBuild,
		"Aliases":             testAliases,
		"Search":              testSearchGameSessions,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}
