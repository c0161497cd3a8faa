package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		in      Input
		wantErr []string // substrings of the message; nil = valid
	}{
		"seed sample name with underscore is accepted (patterns are not anchored)": {
			in: &ClaimGameServerInput{GameServerGroupName: String("MegaFrogServers_NA")},
		},
		"group ARN accepted": {
			in: &ClaimGameServerInput{GameServerGroupName: String("arn:aws:gamelift:us-west-2:123456789012:gameservergroup/MegaFrogServers_NA")},
		},
		"missing required member": {
			in:      &ClaimGameServerInput{},
			wantErr: []string{"1 validation error detected", "Value null at 'GameServerGroupName'", "Member must not be null"},
		},
		"too long": {
			in:      &ClaimGameServerInput{GameServerGroupName: String(strings.Repeat("a", 257))},
			wantErr: []string{"'GameServerGroupName'", "length less than or equal to 256"},
		},
		"pattern": {
			in:      &ClaimGameServerInput{GameServerGroupName: String("x"), GameServerData: String("   ")},
			wantErr: []string{"'GameServerData'", "regular expression pattern"},
		},
		"too short": {
			in:      &ClaimGameServerInput{GameServerGroupName: String("g"), GameServerId: String("ab")},
			wantErr: []string{"'GameServerId'", "greater than or equal to 3"},
		},
		"enum in nested list": {
			in: &ClaimGameServerInput{GameServerGroupName: String("g"),
				FilterOption: &ClaimFilterOption{InstanceStatuses: []FilterInstanceStatus{"ACTIVE", "BOGUS"}}},
			wantErr: []string{"'FilterOption.InstanceStatuses[1]'", "enum value set: [ACTIVE, DRAINING]"},
		},
		"numeric range and two errors": {
			in:      &CreateGameSessionInput{MaximumPlayerSessionCount: Int32(-1), FleetId: String("fleet-1"), Name: String("")},
			wantErr: []string{"2 validation errors detected", "'MaximumPlayerSessionCount'", "value greater than or equal to 0", "'Name'"},
		},
		"list length": {
			in: &TagResourceRequest{ResourceARN: String("arn:aws:gamelift:us-west-2:1:gameservergroup/g"),
				Tags: make([]Tag, 201)},
			wantErr: []string{"'Tags'", "less than or equal to 200"},
		},
		"nested required in list element": {
			in: &TagResourceRequest{ResourceARN: String("arn:aws:gamelift:us-west-2:1:gameservergroup/g"),
				Tags: []Tag{{Key: String("k")}}},
			wantErr: []string{"'Tags[0].Value'", "must not be null"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.in.Validate()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ire *InvalidRequestException
			if !errors.As(err, &ire) {
				t.Fatalf("want InvalidRequestException, got %v", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(ire.Message, w) {
					t.Errorf("message %q lacks %q", ire.Message, w)
				}
			}
		})
	}
}

func TestEveryOperationHasAnInput(t *testing.T) {
	ops := Operations()
	if len(ops) != 120 {
		t.Fatalf("%d operations, want 120", len(ops))
	}
	for _, op := range ops {
		if op.NewInput() == nil || op.Invoke == nil {
			t.Errorf("%s: incomplete", op.Name)
		}
		_, err := op.Invoke(t.Context(), Unimplemented{}, op.NewInput())
		var ni *NotImplementedError
		if !errors.As(err, &ni) || ni.Operation != op.Name || !strings.Contains(ni.ErrorMessage(), op.Name) {
			t.Errorf("%s: Unimplemented answered %v", op.Name, err)
		}
	}
}

func TestTimestampWire(t *testing.T) {
	ts := Time(time.UnixMilli(1580218197293))
	j, _ := json.Marshal(struct {
		T *Timestamp `json:"T,omitempty"`
		U *Timestamp `json:"U,omitempty"`
	}{T: ts})
	if string(j) != `{"T":1580218197.293}` {
		t.Fatalf("json %s", j)
	}
	var back struct{ T *Timestamp }
	if err := json.Unmarshal(j, &back); err != nil || !back.T.Equal(ts.Time) {
		t.Fatalf("json round trip: %v %v", back.T, err)
	}
	c, err := cbor.Marshal(struct {
		T *Timestamp `json:"T,omitempty"`
	}{T: ts})
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]cbor.Tag
	if err := cbor.Unmarshal(c, &raw); err != nil || raw["T"].Number != 1 || raw["T"].Content.(float64) != 1580218197.293 {
		t.Fatalf("cbor %x: %v %v", c, raw, err)
	}
	var cb struct{ T *Timestamp }
	if err := cbor.Unmarshal(c, &cb); err != nil || !cb.T.Equal(ts.Time) {
		t.Fatalf("cbor round trip %v %v", cb.T, err)
	}
	whole, _ := cbor.Marshal(Timestamp{time.Unix(1700000000, 0)})
	var wt cbor.Tag
	if err := cbor.Unmarshal(whole, &wt); err != nil || wt.Content.(uint64) != 1700000000 {
		t.Fatalf("whole seconds should encode as an integer: %x", whole)
	}
}

// FuzzValidate decodes arbitrary JSON into every operation's input and
// validates it: validation must never panic.
func FuzzValidate(f *testing.F) {
	f.Add(uint8(0), []byte(`{"GameServerGroupName":"MegaFrogServers_NA"}`))
	f.Add(uint8(7), []byte(`{"Tags":[{"Key":"a"}],"FilterOption":{"InstanceStatuses":["X"]}}`))
	f.Add(uint8(42), []byte(`{"MaximumPlayerSessionCount":-5,"GameProperties":[{}]}`))
	ops := Operations()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		op := ops[int(which)%len(ops)]
		in := op.NewInput()
		if json.Unmarshal(body, in) != nil {
			return
		}
		if err := in.Validate(); err != nil {
			var ire *InvalidRequestException
			if !errors.As(err, &ire) {
				t.Fatalf("%s: %T", op.Name, err)
			}
		}
	})
}
