// Package arn builds and parses the Amazon Resource Names Hoist gives its
// GameLift resources, and reads the "name or ARN" and "ID or ARN" parameters
// many GameLift operations accept.
//
// Hoist serves one account in one Region, so an ARN names a resource by its
// type and ID alone: NameOrARN and the tags package accept an ARN whatever
// partition, Region or account it carries (an SDK user may hold ARNs built
// for a real AWS account), and compare the resource type case-insensitively
// (GameLift's own documentation shows "GameServerGroup/..." next to the
// lower-case "gameservergroup/..." the service returns).
package arn

import (
	"errors"
	"strings"
)

// GameLift's resource types, as they appear in ARNs.
const (
	TypeGameServerGroup          = "gameservergroup"
	TypeFleet                    = "fleet"
	TypeBuild                    = "build"
	TypeScript                   = "script"
	TypeAlias                    = "alias"
	TypeGameSessionQueue         = "gamesessionqueue"
	TypeMatchmakingConfiguration = "matchmakingconfiguration"
	TypeMatchmakingRuleSet       = "matchmakingruleset"
	TypeLocation                 = "location"
	TypeContainerGroupDefinition = "containergroupdefinition"
	TypeCompute                  = "compute"
	TypeGameSession              = "gamesession"
)

// Types lists every resource type above.
var Types = []string{
	TypeGameServerGroup, TypeFleet, TypeBuild, TypeScript, TypeAlias,
	TypeGameSessionQueue, TypeMatchmakingConfiguration, TypeMatchmakingRuleSet,
	TypeLocation, TypeContainerGroupDefinition, TypeCompute, TypeGameSession,
}

// KnownType reports whether t (any case) is one of GameLift's resource types.
func KnownType(t string) bool {
	for _, k := range Types {
		if strings.EqualFold(k, t) {
			return true
		}
	}
	return false
}

// Service is the service part of every GameLift ARN.
const Service = "gamelift"

// Builder builds the ARNs of one Hoist: arn:aws:gamelift:<Region>:<Account>:<type>/<id>.
// Account may be empty (GameLift's documented examples leave it out).
type Builder struct {
	Region  string
	Account string
}

// ARN returns the ARN of the resource of type resourceType and ID (or name)
// id, for example ARN("fleet", "fleet-1") is
// arn:aws:gamelift:us-east-1:123456789012:fleet/fleet-1.
func (b Builder) ARN(resourceType, id string) string {
	return ARN{Partition: "aws", Service: Service, Region: b.Region, Account: b.Account,
		ResourceType: resourceType, ResourceID: id}.String()
}

// GameSessionARN returns a game session's ARN, gamesession/<fleetID>/<id>.
func (b Builder) GameSessionARN(fleetID, id string) string {
	return b.ARN(TypeGameSession, fleetID+"/"+id)
}

// ARN is a parsed ARN of the form
// arn:<partition>:<service>:<region>:<account>:<type>/<id>.
type ARN struct {
	Partition string
	Service   string
	Region    string
	Account   string
	// ResourceType is the part of the resource before the first "/".
	ResourceType string
	// ResourceID is everything after the first "/" (for a game session
	// "<fleet ID>/<game session ID>").
	ResourceID string
}

// String returns the ARN's text form.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":" + a.Service + ":" + a.Region + ":" + a.Account + ":" +
		a.ResourceType + "/" + a.ResourceID
}

// ErrMalformed is returned (wrapped) by Parse for text that is not an ARN
// with a "<type>/<id>" resource.
var ErrMalformed = errors.New("malformed ARN")

// Parse parses s. It accepts any partition, service, Region and account
// (Region and account may be empty); the resource must be "<type>/<id>"
// with neither part empty. Parse(s).String() == s for every s it accepts.
func Parse(s string) (ARN, error) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return ARN{}, malformed(s, "want arn:<partition>:<service>:<region>:<account>:<type>/<id>")
	}
	if parts[1] == "" || parts[2] == "" {
		return ARN{}, malformed(s, "partition and service must not be empty")
	}
	typ, id, ok := strings.Cut(parts[5], "/")
	if !ok || typ == "" || id == "" {
		return ARN{}, malformed(s, "resource must be <type>/<id>")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return ARN{}, malformed(s, "must not contain white space")
	}
	return ARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4],
		ResourceType: typ, ResourceID: id}, nil
}

// parseError is Parse's error: it names the text and what is wrong.
type parseError struct{ s, why string }

func (e *parseError) Error() string { return "malformed ARN " + quote(e.s) + ": " + e.why }
func (e *parseError) Unwrap() error { return ErrMalformed }

func malformed(s, why string) error { return &parseError{s, why} }

// quote quotes s for an error message, cut to a readable length.
func quote(s string) string {
	const max = 256
	if len(s) > max {
		s = s[:max] + "..."
	}
	return "\"" + s + "\""
}

// NameOrARN returns the name or ID that a "name or ARN" parameter s names
// for resourceType: s itself unless it starts with "arn:"; for a GameLift ARN
// of that type (type compared case-insensitively, any partition, Region and
// account) its resource ID. Any other text starting with "arn:" (malformed,
// another service or another type) is returned unchanged, so the lookup that
// follows finds nothing and answers NotFound naming what the caller sent.
func NameOrARN(s, resourceType string) string {
	if !strings.HasPrefix(s, "arn:") {
		return s
	}
	a, err := Parse(s)
	if err != nil || a.Service != Service || !strings.EqualFold(a.ResourceType, resourceType) {
		return s
	}
	return a.ResourceID
}
