package agentproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/wsrpc"
)

// javaClass is one line of testdata/java-agent-messages.txt.
type javaClass struct {
	name, base, action string
	fields             []string
}

// readJavaClasses reads the list of the Java agent's message classes.
func readJavaClasses(t *testing.T) []javaClass {
	t.Helper()
	f, err := os.Open("testdata/java-agent-messages.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []javaClass
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		if len(w) < 4 {
			t.Fatalf("bad line %q", line)
		}
		c := javaClass{name: w[0], base: w[1], action: w[2]}
		if w[3] != "-" {
			c.fields = w[3:]
		}
		out = append(out, c)
	}
	return out
}

// goTypes maps each Java class to its Go type, every field set (so that
// omitempty fields show), and the Action constant it is sent with.
var goTypes = map[string]struct {
	action string
	value  any
}{
	"SendHeartbeatRequest":                  {ActionSendHeartbeat, SendHeartbeatRequest{Status: StatusActive, ProcessList: []string{"p"}, HeartbeatTimeMillis: 1}},
	"DescribeRuntimeConfigurationRequest":   {ActionDescribeRuntimeConfiguration, DescribeRuntimeConfigurationRequest{}},
	"NotifyServerProcessTerminationRequest": {ActionNotifyServerProcessTermination, NotifyServerProcessTerminationRequest{ProcessID: "p", TerminationReason: ReasonCrashed}},
	"GetFleetRoleCredentialsRequest":        {ActionGetFleetRoleCredentials, GetFleetRoleCredentialsRequest{RoleSessionName: "r"}},
	"SendHeartbeatResponse":                 {ActionSendHeartbeat, SendHeartbeatResponse{Status: StatusActive}},
	"DescribeRuntimeConfigurationResponse": {ActionDescribeRuntimeConfiguration, DescribeRuntimeConfigurationResponse{
		GameSessionActivationTimeoutSeconds: new(int32), MaxConcurrentGameSessionActivations: new(int32)}},
	"GetFleetRoleCredentialsResponse":   {ActionGetFleetRoleCredentials, GetFleetRoleCredentialsResponse{}},
	"ForceExitServerProcessMessage":     {ActionForceExitServerProcess, ForceExitServerProcessMessage{}},
	"ForceExitProcessMessage":           {ActionForceExitProcess, ForceExitProcessMessage{}},
	"StartComputeTerminationMessage":    {ActionStartComputeTermination, StartComputeTerminationMessage{}},
	"RefreshConnectionMessage":          {ActionRefreshConnection, RefreshConnectionMessage{ExpirationTime: 1}},
	"NotifyProcessRegisteredMessage":    {ActionNotifyProcessRegistered, NotifyProcessRegisteredMessage{}},
	"NotifyGameSessionActivatedMessage": {ActionNotifyGameSessionActivated, NotifyGameSessionActivatedMessage{}},
	"GameProcessConfiguration":          {"-", ServerProcess{Parameters: "x"}},
}

// baseFields are the envelope fields each Java base class adds.
var baseFields = map[string][]string{
	"-":                 nil,
	"WebsocketMessage":  {"Action"},
	"WebsocketRequest":  {"Action", "RequestId"},
	"WebsocketResponse": {"Action", "RequestId", "StatusCode"},
}

// frameKeys renders v as Hoist sends it (a request of the agent with no
// StatusCode, a reply or message with 200) and returns its keys.
func frameKeys(t *testing.T, action, base string, v any) []string {
	t.Helper()
	var b []byte
	var err error
	switch base {
	case "-":
		b, err = json.Marshal(v)
	case "WebsocketRequest":
		b, err = wsrpc.Encode(action, "id", 0, "", v)
	default:
		b, err = wsrpc.Encode(action, "id", 200, "", v)
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestFieldsMatchJavaAgent: each message type carries exactly the JSON
// names of the Java agent's class (the envelope included), sent with the
// same Action. Messages of the service whose Java class is a plain
// WebsocketMessage get a RequestId and StatusCode 200 besides, which the
// Java agent ignores (its ObjectMapper does not fail on unknown
// properties).
func TestFieldsMatchJavaAgent(t *testing.T) {
	classes := readJavaClasses(t)
	if len(classes) != len(goTypes) {
		t.Errorf("testdata lists %d classes, the test maps %d", len(classes), len(goTypes))
	}
	for _, c := range classes {
		g, ok := goTypes[c.name]
		if !ok {
			t.Errorf("%s: no Go type", c.name)
			continue
		}
		if g.action != c.action {
			t.Errorf("%s: Action %s, want %s", c.name, g.action, c.action)
		}
		want := append(append([]string{}, baseFields[c.base]...), c.fields...)
		if c.base == "WebsocketMessage" {
			want = append(want, "RequestId", "StatusCode")
		}
		slices.Sort(want)
		if got := frameKeys(t, c.action, c.base, g.value); !slices.Equal(got, want) {
			t.Errorf("%s: Hoist's frame has %v, the Java class %v", c.name, got, want)
		}
	}
}

// TestJavaFramesDecode: frames as the Java agent writes them (Jackson: every
// field present, nulls written) decode into the Go types.
func TestJavaFramesDecode(t *testing.T) {
	var hb SendHeartbeatRequest
	frame := `{"Action":"SendHeartbeat","RequestId":"5d3c","Status":"Activating","ProcessList":["a","b"],"HeartbeatTimeMillis":1702427749000}`
	if err := json.Unmarshal([]byte(frame), &hb); err != nil || hb.Validate() != nil || len(hb.ProcessList) != 2 || hb.Status != StatusActivating {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	var n NotifyServerProcessTerminationRequest
	frame = `{"Action":"NotifyServerProcessTermination","RequestId":"x","ProcessId":"p1","EventCode":null,"TerminationReason":"NORMAL_TERMINATION"}`
	if err := json.Unmarshal([]byte(frame), &n); err != nil || n.Validate() != nil || n.EventCode != nil {
		t.Fatalf("termination: %+v %v", n, err)
	}
	if b, err := json.Marshal(RefreshConnectionMessage{ExpirationTime: 1702427749}); err != nil || !strings.Contains(string(b), `"ExpirationTime":"1702427749"`) {
		t.Errorf("ExpirationTime is written %s, %v; want the Java agent's test's form, a string of epoch seconds", b, err)
	}
	for _, exp := range []string{`1702427749`, `"1702427749"`, `1702427749.5`, `"2023-12-13T00:35:49Z"`} {
		var r RefreshConnectionMessage
		if err := json.Unmarshal([]byte(`{"ExpirationTime":`+exp+`}`), &r); err != nil || r.ExpirationTime.Time() != time.Unix(1702427749, 0).UTC() {
			t.Errorf("ExpirationTime %s: %v %v", exp, r.ExpirationTime, err)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", MaxIDLength+1)
	many := make([]string, MaxProcesses+1)
	for i := range many {
		many[i] = "p" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	bad := map[string]SendHeartbeatRequest{
		"status":    {Status: "ACTIVE"},
		"too many":  {Status: StatusActive, ProcessList: many},
		"empty id":  {Status: StatusActive, ProcessList: []string{""}},
		"long id":   {Status: StatusActive, ProcessList: []string{long}},
		"control":   {Status: StatusActive, ProcessList: []string{"a\nb"}},
		"duplicate": {Status: StatusActive, ProcessList: []string{"a", "a"}},
	}
	for name, hb := range bad {
		if err := hb.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	code := ReasonCrashed
	other := ReasonReadyTimeout
	badN := map[string]NotifyServerProcessTerminationRequest{
		"no id":      {TerminationReason: ReasonCrashed},
		"reason":     {ProcessID: "p", TerminationReason: "EXPLODED"},
		"wrong code": {ProcessID: "p", TerminationReason: ReasonCrashed, EventCode: &other},
		"code alone": {ProcessID: "p", TerminationReason: ReasonNormalTermination, EventCode: &code},
	}
	for name, n := range badN {
		if err := n.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ok := NotifyServerProcessTerminationRequest{ProcessID: "p", TerminationReason: ReasonCrashed, EventCode: &code}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}

// FuzzDecodeAgentRequests: whatever an agent sends, decoding and
// validating its requests neither panics nor accepts what breaks the
// bounds.
func FuzzDecodeAgentRequests(f *testing.F) {
	f.Add([]byte(`{"Status":"Active","ProcessList":["a"],"HeartbeatTimeMillis":1}`))
	f.Add([]byte(`{"ProcessId":"p","EventCode":"SERVER_PROCESS_CRASHED","TerminationReason":"SERVER_PROCESS_CRASHED"}`))
	f.Add([]byte(`{"ProcessList":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var hb SendHeartbeatRequest
		if json.Unmarshal(b, &hb) == nil && hb.Validate() == nil {
			if len(hb.ProcessList) > MaxProcesses || !KnownStatus(hb.Status) {
				t.Fatalf("accepted %+v", hb)
			}
			for _, id := range hb.ProcessList {
				if ValidProcessID(id) != nil {
					t.Fatalf("accepted id %q", id)
				}
			}
		}
		var n NotifyServerProcessTerminationRequest
		if json.Unmarshal(b, &n) == nil && n.Validate() == nil {
			if !KnownReason(n.TerminationReason) || ValidProcessID(n.ProcessID) != nil {
				t.Fatalf("accepted %+v", n)
			}
		}
	})
}

// FuzzEpochSeconds: ExpirationTime decodes to a time in range or fails.
func FuzzEpochSeconds(f *testing.F) {
	for _, s := range []string{`1702427749`, `"1702427749"`, `1.5`, `"2023-12-13T00:35:49Z"`, `null`, `-1`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e EpochSeconds
		if e.UnmarshalJSON(b) == nil && (e < 0 || e > maxEpochSeconds) {
			t.Fatalf("%q decoded to %d", b, e)
		}
	})
}
