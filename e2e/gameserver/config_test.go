package main

import (
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	base := map[string]string{
		"GAMELIFT_SDK_WEBSOCKET_URL": "ws://127.0.0.1:9080/sdk", "GAMELIFT_SDK_AUTH_TOKEN": "t",
		"GAMELIFT_SDK_PROCESS_ID": "proc-1", "GAMELIFT_SDK_HOST_ID": "i-1", "GAMELIFT_SDK_FLEET_ID": "fleet-1",
	}
	tests := map[string]struct {
		env     map[string]string
		args    []string
		wantErr string
		warn    string
		check   func(t *testing.T, c *config)
	}{
		"defaults": {check: func(t *testing.T, c *config) {
			if c.healthInterval != 60*time.Second || c.healthJitter != 10*time.Second || c.callTimeout != 20*time.Second ||
				c.reconnectBase != 8*time.Second || c.host != "127.0.0.1" || c.port != 0 || c.logPaths != nil {
				t.Errorf("%+v", c)
			}
		}},
		"durations as the SDK reads them": {env: map[string]string{"HEALTHCHECK_INTERVAL": "5s", "HEALTHCHECK_MAX_JITTER": "1ms"},
			check: func(t *testing.T, c *config) {
				if c.healthInterval != 5*time.Second || c.healthJitter != time.Millisecond {
					t.Errorf("%v %v", c.healthInterval, c.healthJitter)
				}
			}},
		"a bare number is not a duration": {env: map[string]string{"HEALTHCHECK_INTERVAL": "5"}, warn: "HEALTHCHECK_INTERVAL",
			check: func(t *testing.T, c *config) {
				if c.healthInterval != 60*time.Second {
					t.Errorf("interval %v", c.healthInterval)
				}
			}},
		"ManagedResource": {env: map[string]string{"GAMELIFT_SDK_PROCESS_ID": "ManagedResource"},
			check: func(t *testing.T, c *config) {
				if c.processID == "ManagedResource" || len(c.processID) != 36 {
					t.Errorf("process ID %q", c.processID)
				}
			}},
		"knobs by environment": {env: map[string]string{"HOIST_TEST_UNHEALTHY": "1", "HOIST_TEST_NO_ACTIVATE": "true",
			"HOIST_TEST_ACCEPT_PLAYERS": "0", "HOIST_TEST_ACT_ON_SESSION": "gs", "HOIST_TEST_LOG_PATHS": "a.log, b/"},
			check: func(t *testing.T, c *config) {
				if !c.unhealthy || !c.noActivate || c.acceptPlayers || c.actOnSession != "gs" ||
					strings.Join(c.logPaths, "|") != "a.log|b/" {
					t.Errorf("%+v", c)
				}
			}},
		"knobs by flag": {args: []string{"-port", "7777", "-crash-after-activate", "-crash-on-start", "-end-after", "2s"},
			check: func(t *testing.T, c *config) {
				if c.port != 7777 || !c.crashAfterActivate || !c.crashOnStart || c.endAfter != 2*time.Second {
					t.Errorf("%+v", c)
				}
			}},
		"no URL":             {env: map[string]string{"GAMELIFT_SDK_WEBSOCKET_URL": ""}, wantErr: "WEBSOCKET_URL"},
		"no token":           {env: map[string]string{"GAMELIFT_SDK_AUTH_TOKEN": ""}, wantErr: "AUTH_TOKEN"},
		"bad fleet ID":       {env: map[string]string{"GAMELIFT_SDK_FLEET_ID": "fleet_1"}, wantErr: "FLEET_ID"},
		"bad host ID":        {env: map[string]string{"GAMELIFT_SDK_HOST_ID": "a/b/c"}, wantErr: "HOST_ID"},
		"host ID with one /": {env: map[string]string{"GAMELIFT_SDK_HOST_ID": "cluster-1/task-2"}},
		"port out of range":  {args: []string{"-port", "60001"}, wantErr: "-port"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			c, warnings, err := loadConfig(tc.args, func(k string) string { return env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(warnings, ";"); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want one about %q", got, tc.warn)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
