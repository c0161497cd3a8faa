package arn

import (
	"errors"
	"testing"
)

func TestBuilderARN(t *testing.T) {
	b := Builder{Region: "us-west-2", Account: "123456789012"}
	tests := map[string]struct {
		typ, id string
		want    string
	}{
		"game server group": {TypeGameServerGroup, "MegaFrogServers_NA", "arn:aws:gamelift:us-west-2:123456789012:gameservergroup/MegaFrogServers_NA"},
		"fleet":             {TypeFleet, "fleet-1", "arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1"},
		"build":             {TypeBuild, "build-1", "arn:aws:gamelift:us-west-2:123456789012:build/build-1"},
		"location":          {TypeLocation, "custom-home", "arn:aws:gamelift:us-west-2:123456789012:location/custom-home"},
		"game session":      {TypeGameSession, "fleet-1/gsess-1", "arn:aws:gamelift:us-west-2:123456789012:gamesession/fleet-1/gsess-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := b.ARN(tc.typ, tc.id); got != tc.want {
				t.Errorf("ARN = %q, want %q", got, tc.want)
			}
		})
	}
	if got, want := b.GameSessionARN("fleet-1", "gsess-1"), tests["game session"].want; got != want {
		t.Errorf("GameSessionARN = %q, want %q", got, want)
	}
	if got, want := (Builder{Region: "eu-west-1"}).ARN(TypeAlias, "alias-1"), "arn:aws:gamelift:eu-west-1::alias/alias-1"; got != want {
		t.Errorf("empty account: %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in   string
		want ARN
		bad  bool
	}{
		"fleet": {in: "arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1",
			want: ARN{"aws", "gamelift", "us-west-2", "123456789012", "fleet", "fleet-1"}},
		"documented sample (no account, capitalized type)": {in: "arn:aws:gamelift:us-west-2::GameServerGroup/MegaFrogServers_NA",
			want: ARN{"aws", "gamelift", "us-west-2", "", "GameServerGroup", "MegaFrogServers_NA"}},
		"game session keeps both IDs": {in: "arn:aws:gamelift:us-east-1::gamesession/fleet-1/gsess-2",
			want: ARN{"aws", "gamelift", "us-east-1", "", "gamesession", "fleet-1/gsess-2"}},
		"colon in resource": {in: "arn:aws-cn:gamelift:cn-north-1:1:alias/a:b",
			want: ARN{"aws-cn", "gamelift", "cn-north-1", "1", "alias", "a:b"}},
		"empty":           {in: "", bad: true},
		"not arn":         {in: "fleet-1", bad: true},
		"too few parts":   {in: "arn:aws:gamelift:us-west-2:fleet/fleet-1", bad: true},
		"no slash":        {in: "arn:aws:gamelift:us-west-2:1:fleet", bad: true},
		"empty type":      {in: "arn:aws:gamelift:us-west-2:1:/fleet-1", bad: true},
		"empty id":        {in: "arn:aws:gamelift:us-west-2:1:fleet/", bad: true},
		"empty partition": {in: "arn::gamelift:us-west-2:1:fleet/f", bad: true},
		"empty service":   {in: "arn:aws::us-west-2:1:fleet/f", bad: true},
		"white space":     {in: "arn:aws:gamelift:us-west-2:1:fleet/f 1", bad: true},
		"ARN: upper":      {in: "ARN:aws:gamelift:r:1:fleet/f", bad: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse(%q) = %+v, %v; want ErrMalformed", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestNameOrARN(t *testing.T) {
	tests := map[string]struct {
		in, typ, want string
	}{
		"plain name":         {"MegaFrogServers_NA", TypeGameServerGroup, "MegaFrogServers_NA"},
		"our ARN":            {"arn:aws:gamelift:us-west-2:123456789012:gameservergroup/g1", TypeGameServerGroup, "g1"},
		"other region":       {"arn:aws:gamelift:eu-central-1:999999999999:gameservergroup/g1", TypeGameServerGroup, "g1"},
		"documented sample":  {"arn:aws:gamelift:us-west-2::GameServerGroup/MegaFrogServers_NA", TypeGameServerGroup, "MegaFrogServers_NA"},
		"other type":         {"arn:aws:gamelift:us-west-2::fleet/fleet-1", TypeGameServerGroup, "arn:aws:gamelift:us-west-2::fleet/fleet-1"},
		"other service":      {"arn:aws:s3:us-west-2::gameservergroup/g1", TypeGameServerGroup, "arn:aws:s3:us-west-2::gameservergroup/g1"},
		"malformed":          {"arn:nonsense", TypeFleet, "arn:nonsense"},
		"game session":       {"arn:aws:gamelift:us-east-1::gamesession/fleet-1/gsess-2", TypeGameSession, "fleet-1/gsess-2"},
		"empty":              {"", TypeFleet, ""},
		"name containing ar": {"arnold", TypeFleet, "arnold"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := NameOrARN(tc.in, tc.typ); got != tc.want {
				t.Errorf("NameOrARN(%q, %q) = %q, want %q", tc.in, tc.typ, got, tc.want)
			}
		})
	}
}

func TestKnownType(t *testing.T) {
	for _, typ := range Types {
		if !KnownType(typ) {
			t.Errorf("KnownType(%q) = false", typ)
		}
	}
	if !KnownType("GameServerGroup") || KnownType("bucket") || KnownType("") {
		t.Error("KnownType: case folding or unknown type wrong")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"arn:aws:gamelift:us-west-2:123456789012:fleet/fleet-1",
		"arn:aws:gamelift:us-west-2::GameServerGroup/MegaFrogServers_NA",
		"arn:aws:gamelift:us-east-1::gamesession/fleet-1/gsess-2",
		"arn:::::/", "arn:a:b:c:d:e/f:g", "fleet-1", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q): error %v is not ErrMalformed", s, err)
			}
			if got := NameOrARN(s, TypeFleet); got != s {
				t.Fatalf("NameOrARN of a malformed %q = %q, want it unchanged", s, got)
			}
			return
		}
		if a.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, a.String())
		}
		b, err := Parse(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %+v, %v", s, b, err)
		}
		if a.ResourceType == "" || a.ResourceID == "" || a.Partition == "" || a.Service == "" {
			t.Fatalf("Parse(%q) accepted empty parts: %+v", s, a)
		}
		if a.Service == Service {
			if got := NameOrARN(s, a.ResourceType); got != a.ResourceID {
				t.Fatalf("NameOrARN(%q) = %q, want %q", s, got, a.ResourceID)
			}
		}
	})
}
