package protocol

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// botoScript calls the server at argv[1] with boto3 and prints one JSON line:
// a successful DescribeGameServer and a modeled ConflictException.
const botoScript = `
import json, sys
import boto3
from botocore.config import Config
c = boto3.client("gamelift", endpoint_url=sys.argv[1], region_name="us-west-2",
    aws_access_key_id="AKIDTEST", aws_secret_access_key="secret",
    config=Config(retries={"total_max_attempts": 1}, proxies={}))
gs = c.describe_game_server(GameServerGroupName="group-1", GameServerId="gs-1")["GameServer"]
out = {"id": gs["GameServerId"], "registered": gs["RegistrationTime"].timestamp(), "data": gs.get("GameServerData")}
try:
    c.claim_game_server(GameServerGroupName="g", GameServerId="gs-1")
except c.exceptions.ConflictException as e:
    out["code"] = e.response["Error"]["Code"]
    out["message"] = e.response["Error"]["Message"]
    out["status"] = e.response["ResponseMetadata"]["HTTPStatusCode"]
    out["request_id"] = e.response["ResponseMetadata"]["RequestId"]
print(json.dumps(out))
`

// TestBoto3 runs boto3 (AWS JSON 1.1) against the handler; skipped only
// when python3 or boto3 is not installed.
func TestBoto3(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		t.Skip("boto3 not installed")
	}
	s := newTestServer(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", botoScript, s.URL)
	cmd.Env = botoEnv()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("boto3: %v\n%s", err, stderr)
	}
	var got struct {
		ID         string  `json:"id"`
		Registered float64 `json:"registered"`
		Data       *string `json:"data"`
		Code       string  `json:"code"`
		Message    string  `json:"message"`
		Status     int     `json:"status"`
		RequestID  string  `json:"request_id"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if got.ID != "gs-1" || got.Data != nil || math.Abs(got.Registered-1580218197.293) > 1e-6 {
		t.Errorf("success parsed as %+v", got)
	}
	if got.Code != "ConflictException" || got.Message != "game server gs-1 is already claimed" || got.Status != 400 || len(got.RequestID) != 36 {
		t.Errorf("error parsed as %+v", got)
	}
}

// botoEnv is the environment minus anything that would make botocore read
// local configuration or go through a proxy.
func botoEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AWS_"), strings.HasSuffix(strings.ToUpper(k), "_PROXY"):
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
		"NO_PROXY=*",
	)
}
