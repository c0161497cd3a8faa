package protocol

import (
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

const cborPath = "/service/GameLift/operation/"

func cborHeaders() map[string]string {
	return map[string]string{"smithy-protocol": "rpc-v2-cbor", "Content-Type": "application/cbor", "Accept": "application/cbor", "Authorization": "ok"}
}

// cborBody encodes v with the library defaults (definite lengths).
func cborBody(t *testing.T, v any) io.Reader {
	t.Helper()
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

// hexBody is a hand-written CBOR body (spaces ignored).
func hexBody(t *testing.T, s string) io.Reader {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

// diag renders CBOR in diagnostic notation, to compare bodies exactly.
func diag(t *testing.T, b []byte) string {
	t.Helper()
	d, err := cbor.Diagnose(b)
	if err != nil {
		t.Fatalf("response is not CBOR (%v): %x", err, b)
	}
	return d
}

// checkCBORResponse checks what every RPC v2 CBOR response carries.
func checkCBORResponse(t *testing.T, r rawResponse) {
	t.Helper()
	if got := r.Header.Get("smithy-protocol"); got != "rpc-v2-cbor" {
		t.Errorf("smithy-protocol = %q", got)
	}
	if id := r.Header.Get("x-amzn-RequestId"); len(id) != 36 {
		t.Errorf("x-amzn-RequestId = %q, want a UUID", id)
	}
	if r.Header.Get("x-amzn-ErrorType") != "" {
		t.Errorf("CBOR response carries x-amzn-ErrorType")
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case len(r.Body) == 0 && ct != "":
		t.Errorf("empty body with Content-Type %q", ct)
	case len(r.Body) > 0 && ct != "application/cbor":
		t.Errorf("Content-Type = %q", ct)
	}
}

// checkCBORError checks an RPC v2 CBOR error: status, and a body of exactly
// __type (an absolute shape ID), message and Message.
func checkCBORError(t *testing.T, r rawResponse, status int, code, msgPart string) {
	t.Helper()
	checkCBORResponse(t, r)
	if r.Status != status {
		t.Errorf("status = %d, want %d (body %s)", r.Status, status, diag(t, r.Body))
	}
	var body map[string]any
	if err := cbor.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body %x: %v", r.Body, err)
	}
	wantType := code
	if modeledErrors[code] {
		wantType = "com.amazonaws.gamelift#" + code
	}
	if len(body) != 3 || body["__type"] != wantType || body["message"] != body["Message"] {
		t.Errorf("error body = %s, want __type %q, message and Message", diag(t, r.Body), code)
	}
	if msg, _ := body["message"].(string); !strings.Contains(msg, msgPart) {
		t.Errorf("message = %q, want it to contain %q", msg, msgPart)
	}
}

func TestCBORSuccess(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}})
	const gs1 = `{"ClaimStatus": "CLAIMED", "ConnectionInfo": "127.0.0.1:7777", "GameServerGroupName": "group-1", ` +
		`"GameServerId": "gs-1", "InstanceId": "i-1234567890abcdef0", "LastClaimTime": 1(1580218200), ` +
		`"RegistrationTime": 1(1580218197.293), "UtilizationStatus": "AVAILABLE"}`
	tests := map[string]struct {
		path   string
		header map[string]string
		body   io.Reader
		want   string // diagnostic notation; "" for no body
	}{
		"describe: absent members omitted, timestamps as tag 1": {
			path: "DescribeGameServer",
			body: cborBody(t, map[string]any{"GameServerGroupName": "group-1", "GameServerId": "gs-1"}),
			want: `{"GameServer": ` + gs1 + `}`,
		},
		"absolute service name in the path": {
			path: "/service/com.amazonaws.gamelift.GameLift/operation/DescribeGameServer",
			body: cborBody(t, map[string]any{"GameServerGroupName": "group-1", "GameServerId": "gs-1"}),
			want: `{"GameServer": ` + gs1 + `}`,
		},
		"list": {
			path: "ListGameServers",
			body: cborBody(t, map[string]any{"GameServerGroupName": "group-1"}),
			want: `{"GameServers": [` + gs1 + `, ` + strings.Replace(gs1, "gs-1", "gs-2", 1) + `], "NextToken": "token-2"}`,
		},
		"no output shape: no body": {path: "DeleteAlias", body: cborBody(t, map[string]any{"AliasId": "alias-1234"})},
		"nil output: no body": {
			path: "DescribeGameServer",
			body: cborBody(t, map[string]any{"GameServerGroupName": "g", "GameServerId": "gs-nil-output"}),
		},
		"indefinite-length map and text, tag 1 float timestamp, unknown member ignored": {
			path: "DescribeFleetEvents",
			// {_ "FleetId": (_ "fleet", "-1"), "StartTime": 1(1580218197.293), "Limit": 5, "Extra": [_ 1]}
			body: hexBody(t, "bf 67 466c6565744964 7f 65 666c656574 62 2d31 ff 69 537461727454696d65 c1 fb 41d78c0dd552c083"+
				" 65 4c696d6974 05 65 4578747261 9f 01 ff ff"),
			want: `{"Events": [{"Count": 5, "EventId": "ev-1", "EventTime": 1(1580218197.293)}]}`,
		},
		"tag 1 integer timestamp": {
			path: "DescribeFleetEvents",
			body: cborBody(t, map[string]any{"FleetId": "fleet-1", "StartTime": cbor.Tag{Number: 1, Content: 1580218200}}),
			want: `{"Events": [{"EventId": "ev-1", "EventTime": 1(1580218200)}]}`,
		},
		"untagged timestamp, undefined member is absent": {
			path: "DescribeFleetEvents",
			// {"FleetId": "fleet-1", "StartTime": 1580218200, "Limit": undefined}
			body: hexBody(t, "a3 67 466c6565744964 67 666c6565742d31 69 537461727454696d65 1a 5e303758 65 4c696d6974 f7"),
			want: `{"Events": [{"EventId": "ev-1", "EventTime": 1(1580218200)}]}`,
		},
		"blob: indefinite-length byte string": {
			path: "CreateScript",
			// {"Name": "s", "ZipFile": (_ h'504b', h'0304')}
			body: hexBody(t, "a2 64 4e616d65 61 73 67 5a697046696c65 5f 42 504b 42 0304 ff"),
			want: `{"Script": {"Name": "s", "SizeOnDisk": 4, "Version": "504b0304"}}`,
		},
		"missing smithy-protocol header tolerated": {
			path:   "DescribeGameServer",
			header: with(cborHeaders(), "smithy-protocol", ""),
			body:   cborBody(t, map[string]any{"GameServerGroupName": "group-1", "GameServerId": "gs-1"}),
			want:   `{"GameServer": ` + gs1 + `}`,
		},
		"NaN is encodable in CBOR": {
			path: "DescribeScalingPolicies",
			body: cborBody(t, map[string]any{"FleetId": "fleet-1"}),
			want: `{"ScalingPolicies": [{"Name": "p", "Threshold": NaN}]}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := tc.path
			if !strings.HasPrefix(path, "/") {
				path = cborPath + path
			}
			header := tc.header
			if header == nil {
				header = cborHeaders()
			}
			r := s.do(t, "POST", path, header, tc.body)
			checkCBORResponse(t, r)
			if r.Status != 200 {
				t.Fatalf("status %d: %x", r.Status, r.Body)
			}
			if tc.want == "" {
				if len(r.Body) != 0 {
					t.Errorf("body = %s, want none", diag(t, r.Body))
				}
				return
			}
			if got := diag(t, r.Body); got != tc.want {
				t.Errorf("body\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestCBORErrors(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}, MaxBodyBytes: 64 << 10})
	describe := cborBody(t, map[string]any{"GameServerGroupName": "group-1", "GameServerId": "gs-1"})
	gs := func(id string) io.Reader {
		return cborBody(t, map[string]any{"GameServerGroupName": "g", "GameServerId": id})
	}
	deep := strings.Repeat("81", 40) + "00" // 40 nested one-element arrays
	tests := map[string]struct {
		method, path string
		header       map[string]string
		body         io.Reader
		status       int
		code, msg    string
	}{
		"unknown operation":      {path: cborPath + "LaunchRocket", body: hexBody(t, "a0"), status: 400, code: CodeUnknownOperation, msg: `"LaunchRocket" is not a GameLift operation`},
		"empty operation":        {path: cborPath, body: hexBody(t, "a0"), status: 400, code: CodeUnknownOperation, msg: `"" is not a GameLift operation`},
		"other service":          {path: "/service/DynamoDB/operation/GetItem", body: hexBody(t, "a0"), status: 404, code: CodeUnknownOperation, msg: "no GameLift API route"},
		"bad path shape":         {path: "/service/GameLift/operations/DescribeGameServer", body: describe, status: 404, code: CodeUnknownOperation, msg: "no GameLift API route"},
		"extra path segment":     {path: cborPath + "DescribeGameServer/x", body: describe, status: 404, code: CodeUnknownOperation, msg: "no GameLift API route"},
		"unknown path, smithy":   {path: "/elsewhere", body: describe, status: 404, code: CodeUnknownOperation, msg: "no GameLift API route"},
		"GET":                    {method: "GET", status: 405, code: CodeMethodNotAllowed, msg: "POST only, not GET"},
		"JSON content type":      {header: with(cborHeaders(), "Content-Type", "application/x-amz-json-1.1"), body: describe, status: 415, code: CodeUnsupportedMediaType, msg: "send application/cbor"},
		"other smithy-protocol":  {header: with(cborHeaders(), "smithy-protocol", "rpc-v2-json"), body: describe, status: 415, code: CodeUnsupportedMediaType, msg: `smithy-protocol header is "rpc-v2-json"`},
		"X-Amz-Target present":   {header: with(cborHeaders(), "X-Amz-Target", "GameLift.DescribeGameServer"), body: describe, status: 400, code: CodeSerialization, msg: "must not carry an X-Amz-Target"},
		"too large":              {body: bytes.NewReader(make([]byte, 70<<10)), status: 413, code: CodeRequestTooLarge, msg: "larger than 65536 bytes"},
		"truncated":              {body: hexBody(t, "a2 6b 47616d6553657276"), status: 400, code: CodeSerialization, msg: "ends in the middle of a data item"},
		"trailing data":          {body: hexBody(t, "a0 00"), status: 400, code: CodeSerialization, msg: "extraneous data"},
		"array body":             {body: hexBody(t, "80"), status: 400, code: CodeSerialization, msg: "must be a CBOR map"},
		"null body":              {body: hexBody(t, "f6"), status: 400, code: CodeSerialization, msg: "must be a CBOR map"},
		"text for integer":       {path: cborPath + "ListGameServers", body: cborBody(t, map[string]any{"GameServerGroupName": "g", "Limit": "ten"}), status: 400, code: CodeSerialization, msg: "member Limit: expected an integer, got a CBOR UTF-8 text string"},
		"integer overflow":       {path: cborPath + "ListGameServers", body: cborBody(t, map[string]any{"GameServerGroupName": "g", "Limit": uint64(1) << 32}), status: 400, code: CodeSerialization, msg: "(4294967296 overflows int32)"},
		"float for integer":      {path: cborPath + "ListGameServers", body: cborBody(t, map[string]any{"GameServerGroupName": "g", "Limit": 1.5}), status: 400, code: CodeSerialization, msg: "member Limit: expected an integer"},
		"byte string for string": {body: cborBody(t, map[string]any{"GameServerGroupName": []byte("g"), "GameServerId": "gs-1"}), status: 400, code: CodeSerialization, msg: "member GameServerGroupName: expected a string, got a CBOR byte string"},
		"map for list":           {path: cborPath + "ClaimGameServer", body: cborBody(t, map[string]any{"GameServerGroupName": "g", "FilterOption": map[string]any{"InstanceStatuses": map[string]any{}}}), status: 400, code: CodeSerialization, msg: "a value inside member FilterOption: expected a list, got a CBOR map"},
		"invalid UTF-8":          {body: hexBody(t, "a1 6c 47616d655365727665724964 63 ff fe fd"), status: 400, code: CodeSerialization, msg: "invalid UTF-8"},
		"duplicate key":          {body: hexBody(t, "a2 6c 47616d655365727665724964 64 67732d31 6c 47616d655365727665724964 64 67732d32"), status: 400, code: CodeSerialization, msg: "duplicate key GameServerId"},
		"nesting too deep":       {body: hexBody(t, "a1 61 58 "+deep), status: 400, code: CodeSerialization, msg: "exceeded max nested level"},
		"array too long":         {body: hexBody(t, "a1 61 58 99 2711"+strings.Repeat("00", 10001)), status: 400, code: CodeSerialization, msg: "exceeded max number of elements"},
		"bad timestamp":          {path: cborPath + "DescribeFleetEvents", body: cborBody(t, map[string]any{"FleetId": "fleet-1", "StartTime": cbor.Tag{Number: 1, Content: "yesterday"}}), status: 400, code: CodeSerialization, msg: "could not decode"},
		"validation: empty body": {path: cborPath + "ListGameServers", header: with(cborHeaders(), "Content-Type", ""), status: 400, code: "InvalidRequestException", msg: "Value null at 'GameServerGroupName'"},
		"validation: length":     {body: gs("ab"), status: 400, code: "InvalidRequestException", msg: "Member must have length greater than or equal to 3"},
		"modeled error":          {body: gs("gs-missing"), status: 400, code: "NotFoundException", msg: "game server gs-missing does not exist"},
		"conflict":               {path: cborPath + "ClaimGameServer", body: gs("gs-1"), status: 400, code: "ConflictException", msg: "already claimed"},
		"not implemented":        {path: cborPath + "DescribeAlias", body: cborBody(t, map[string]any{"AliasId": "alias-1"}), status: 501, code: "UnsupportedOperationException", msg: "DescribeAlias"},
		"service panics":         {body: gs("gs-panic"), status: 500, code: "InternalServiceException", msg: "internal error (request ID "},
		"service fails":          {body: gs("gs-internal"), status: 500, code: "InternalServiceException", msg: "internal error (request ID "},
		"auth rejects":           {header: with(cborHeaders(), "Authorization", "bad"), body: describe, status: 403, code: "UnrecognizedClientException", msg: "security token"},
		"auth fails":             {header: with(cborHeaders(), "Authorization", "broken"), body: describe, status: 500, code: "InternalServiceException", msg: "internal error"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method, path, header := tc.method, tc.path, tc.header
			if method == "" {
				method = "POST"
			}
			if path == "" {
				path = cborPath + "DescribeGameServer"
			}
			if header == nil {
				header = cborHeaders()
			}
			r := s.do(t, method, path, header, tc.body)
			checkCBORError(t, r, tc.status, tc.code, tc.msg)
			if tc.status == 500 && !strings.Contains(string(r.Body), r.Header.Get("x-amzn-RequestId")) {
				t.Errorf("internal error does not name the request ID: %s", diag(t, r.Body))
			}
			if strings.Contains(string(r.Body), "secret detail") {
				t.Errorf("internal error detail leaked to the client")
			}
		})
	}
}
