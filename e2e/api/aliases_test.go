//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package api_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

var aliasIDPattern = regexp.MustCompile(`^alias-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// aliasFixture is a Hoist with an Anywhere fleet (aliases need a fleet to
// route to; no server process is needed for what these tests check).
type aliasFixture struct {
	v2                *glv2.Client
	v1                *glv1.GameLift
	ctx               context.Context
	fleetID, fleetARN string
}

func newAliasFixture(t *testing.T) *aliasFixture {
	t.Helper()
	h := startHoist(t)
	f := &aliasFixture{v2: newV2(h), v1: h.V1(), ctx: hoisttest.Context(t, 2*time.Minute)}
	if _, err := f.v2.CreateLocation(f.ctx, &glv2.CreateLocationInput{LocationName: awsv2.String("custom-aliases")}); err != nil {
		t.Fatal(err)
	}
	out, err := f.v2.CreateFleet(f.ctx, &glv2.CreateFleetInput{Name: awsv2.String("alias-target"), ComputeType: types.ComputeTypeAnywhere,
		Locations: []types.LocationConfiguration{{Location: awsv2.String("custom-aliases")}}})
	if err != nil {
		t.Fatal(err)
	}
	f.fleetID, f.fleetARN = awsv2.ToString(out.FleetAttributes.FleetId), awsv2.ToString(out.FleetAttributes.FleetArn)
	return f
}

// wantV2 checks that err is the modeled aws-sdk-go-v2 error T and returns it.
func wantV2[T error](t *testing.T, what string, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("%s: got %v, want %T", what, err, target)
	}
	return target
}

// wantV1 checks that err is an aws-sdk-go v1 error with this code and
// returns its message.
func wantV1(t *testing.T, what string, err error, code string) string {
	t.Helper()
	var ae awserr.Error
	if !errors.As(err, &ae) || ae.Code() != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
	return ae.Message()
}

// TestAliasLifecycle creates, describes, resolves, updates and deletes
// aliases through both SDKs, and uses them where the model accepts an
// AliasId.
func TestAliasLifecycle(t *testing.T) {
	f := newAliasFixture(t)
	ctx := f.ctx

	// SIMPLE over CBOR.
	out, err := f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("live"), Description: awsv2.String("players go here"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String(f.fleetID)}})
	if err != nil {
		t.Fatalf("CreateAlias: %v", err)
	}
	a := out.Alias
	id := awsv2.ToString(a.AliasId)
	if !aliasIDPattern.MatchString(id) {
		t.Errorf("AliasId %q is not alias-<uuid>", id)
	}
	aliasARN := "arn:aws:gamelift:" + hoisttest.Region + ":" + hoisttest.Account + ":alias/" + id
	if awsv2.ToString(a.AliasArn) != aliasARN {
		t.Errorf("AliasArn %q, want %q", awsv2.ToString(a.AliasArn), aliasARN)
	}
	if a.CreationTime == nil || a.LastUpdatedTime == nil || !a.CreationTime.Equal(*a.LastUpdatedTime) ||
		time.Since(*a.CreationTime) > time.Minute {
		t.Errorf("times: created %v, updated %v", a.CreationTime, a.LastUpdatedTime)
	}
	if a.RoutingStrategy == nil || a.RoutingStrategy.Type != types.RoutingStrategyTypeSimple || awsv2.ToString(a.RoutingStrategy.FleetId) != f.fleetID {
		t.Errorf("RoutingStrategy %+v", a.RoutingStrategy)
	}
	// Resolve by ID (CBOR) and by ARN (JSON).
	r2, err := f.v2.ResolveAlias(ctx, &glv2.ResolveAliasInput{AliasId: awsv2.String(id)})
	if err != nil || awsv2.ToString(r2.FleetId) != f.fleetID || awsv2.ToString(r2.FleetArn) != f.fleetARN {
		t.Fatalf("ResolveAlias: %v %+v, want %s %s", err, r2, f.fleetID, f.fleetARN)
	}
	r1, err := f.v1.ResolveAliasWithContext(ctx, &glv1.ResolveAliasInput{AliasId: awsv1.String(aliasARN)})
	if err != nil || awsv1.StringValue(r1.FleetId) != f.fleetID || awsv1.StringValue(r1.FleetArn) != f.fleetARN {
		t.Fatalf("ResolveAlias (v1, by ARN): %v %+v", err, r1)
	}
	d1, err := f.v1.DescribeAliasWithContext(ctx, &glv1.DescribeAliasInput{AliasId: awsv1.String(aliasARN)})
	if err != nil || awsv1.StringValue(d1.Alias.Name) != "live" || awsv1.StringValue(d1.Alias.Description) != "players go here" ||
		awsv1.StringValue(d1.Alias.RoutingStrategy.FleetId) != f.fleetID {
		t.Fatalf("DescribeAlias (v1): %v %+v", err, d1)
	}
	// A SIMPLE alias stands for its fleet in DescribeGameSessions and
	// DescribeGameSessionDetails.
	if gs, err := f.v2.DescribeGameSessions(ctx, &glv2.DescribeGameSessionsInput{AliasId: awsv2.String(id)}); err != nil || len(gs.GameSessions) != 0 {
		t.Errorf("DescribeGameSessions by alias: %v %+v", err, gs)
	}
	if _, err := f.v1.DescribeGameSessionDetailsWithContext(ctx, &glv1.DescribeGameSessionDetailsInput{AliasId: awsv1.String(aliasARN)}); err != nil {
		t.Errorf("DescribeGameSessionDetails by alias ARN: %v", err)
	}

	// TERMINAL over JSON: every use answers TerminalRoutingStrategyException
	// with the alias's message.
	const msg = "This version of the game is retired: download version 2"
	tout, err := f.v1.CreateAliasWithContext(ctx, &glv1.CreateAliasInput{Name: awsv1.String("retired"),
		RoutingStrategy: &glv1.RoutingStrategy{Type: awsv1.String("TERMINAL"), Message: awsv1.String(msg)}})
	if err != nil {
		t.Fatalf("CreateAlias TERMINAL (v1): %v", err)
	}
	tid := awsv1.StringValue(tout.Alias.AliasId)
	_, err = f.v1.ResolveAliasWithContext(ctx, &glv1.ResolveAliasInput{AliasId: awsv1.String(tid)})
	if got := wantV1(t, "ResolveAlias TERMINAL (v1)", err, "TerminalRoutingStrategyException"); got != msg {
		t.Errorf("ResolveAlias TERMINAL (v1): message %q, want %q", got, msg)
	}
	_, err = f.v2.ResolveAlias(ctx, &glv2.ResolveAliasInput{AliasId: awsv2.String(tid)})
	if e := wantV2[*types.TerminalRoutingStrategyException](t, "ResolveAlias TERMINAL", err); e.ErrorMessage() != msg {
		t.Errorf("ResolveAlias TERMINAL: message %q, want %q", e.ErrorMessage(), msg)
	}
	_, err = f.v2.CreateGameSession(ctx, &glv2.CreateGameSessionInput{AliasId: awsv2.String(tid), MaximumPlayerSessionCount: awsv2.Int32(2),
		Location: awsv2.String("custom-aliases")})
	if e := wantV2[*types.TerminalRoutingStrategyException](t, "CreateGameSession on a TERMINAL alias", err); e.ErrorMessage() != msg {
		t.Errorf("CreateGameSession on a TERMINAL alias: message %q, want %q", e.ErrorMessage(), msg)
	}
	_, err = f.v1.DescribeGameSessionsWithContext(ctx, &glv1.DescribeGameSessionsInput{AliasId: awsv1.String(tid)})
	if got := wantV1(t, "DescribeGameSessions on a TERMINAL alias (v1)", err, "TerminalRoutingStrategyException"); got != msg {
		t.Errorf("DescribeGameSessions on a TERMINAL alias: message %q", got)
	}

	// UpdateAlias: the terminal alias is pointed at the fleet and renamed;
	// LastUpdatedTime moves, CreationTime does not.
	u, err := f.v2.UpdateAlias(ctx, &glv2.UpdateAliasInput{AliasId: awsv2.String(tid), Name: awsv2.String("revived"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String(f.fleetID)}})
	if err != nil {
		t.Fatalf("UpdateAlias: %v", err)
	}
	if awsv2.ToString(u.Alias.Name) != "revived" || u.Alias.RoutingStrategy.Type != types.RoutingStrategyTypeSimple ||
		!u.Alias.CreationTime.Equal(*tout.Alias.CreationTime) || u.Alias.LastUpdatedTime.Before(*tout.Alias.CreationTime) {
		t.Errorf("UpdateAlias: %+v", u.Alias)
	}
	if r, err := f.v2.ResolveAlias(ctx, &glv2.ResolveAliasInput{AliasId: awsv2.String(tid)}); err != nil || awsv2.ToString(r.FleetId) != f.fleetID {
		t.Errorf("ResolveAlias after UpdateAlias: %v %+v", err, r)
	}

	// Refusals.
	_, err = f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("x"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String("fleet-00000000-0000-4000-8000-000000000000")}})
	wantV2[*types.InvalidRequestException](t, "CreateAlias onto a fleet that does not exist", err)
	_, err = f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("x"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple}})
	wantV2[*types.InvalidRequestException](t, "CreateAlias SIMPLE without FleetId", err)
	_, err = f.v1.CreateAliasWithContext(ctx, &glv1.CreateAliasInput{Name: awsv1.String("x"),
		RoutingStrategy: &glv1.RoutingStrategy{Type: awsv1.String("TERMINAL"), FleetId: awsv1.String(f.fleetID)}})
	wantV1(t, "CreateAlias TERMINAL with a FleetId (v1)", err, "InvalidRequestException")
	_, err = f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("x"),
		RoutingStrategy: &types.RoutingStrategy{FleetId: awsv2.String(f.fleetID)}})
	wantV2[*types.InvalidRequestException](t, "CreateAlias without a routing type", err)
	_, err = f.v2.UpdateAlias(ctx, &glv2.UpdateAliasInput{AliasId: awsv2.String(id),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, FleetId: awsv2.String(f.fleetID)}})
	wantV2[*types.InvalidRequestException](t, "UpdateAlias to TERMINAL with a FleetId", err)

	// DeleteAlias; afterwards every operation answers NotFoundException.
	if _, err := f.v2.DeleteAlias(ctx, &glv2.DeleteAliasInput{AliasId: awsv2.String(id)}); err != nil {
		t.Fatalf("DeleteAlias: %v", err)
	}
	_, err = f.v2.DeleteAlias(ctx, &glv2.DeleteAliasInput{AliasId: awsv2.String(id)})
	wantV2[*types.NotFoundException](t, "DeleteAlias of a deleted alias", err)
	_, err = f.v1.DeleteAliasWithContext(ctx, &glv1.DeleteAliasInput{AliasId: awsv1.String(aliasARN)})
	wantV1(t, "DeleteAlias of a deleted alias (v1, by ARN)", err, "NotFoundException")
	_, err = f.v2.DescribeAlias(ctx, &glv2.DescribeAliasInput{AliasId: awsv2.String(id)})
	wantV2[*types.NotFoundException](t, "DescribeAlias of a deleted alias", err)
	_, err = f.v2.UpdateAlias(ctx, &glv2.UpdateAliasInput{AliasId: awsv2.String(id), Name: awsv2.String("x")})
	wantV2[*types.NotFoundException](t, "UpdateAlias of a deleted alias", err)
	_, err = f.v2.ResolveAlias(ctx, &glv2.ResolveAliasInput{AliasId: awsv2.String(id)})
	wantV2[*types.NotFoundException](t, "ResolveAlias of a deleted alias", err)
	_, err = f.v2.CreateGameSession(ctx, &glv2.CreateGameSessionInput{AliasId: awsv2.String(id), MaximumPlayerSessionCount: awsv2.Int32(2)})
	wantV2[*types.NotFoundException](t, "CreateGameSession on a deleted alias", err)
}

// TestListAliases checks ListAliases' filters and pagination through both
// SDKs, and that a NextToken Hoist did not issue is refused.
func TestListAliases(t *testing.T) {
	f := newAliasFixture(t)
	ctx := f.ctx
	var all, simple, terminal, blue []string
	for i := range 7 {
		in := &glv2.CreateAliasInput{Name: awsv2.String("blue"),
			RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String(f.fleetID)}}
		if i%3 == 2 {
			in.Name = awsv2.String("red")
			in.RoutingStrategy = &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: awsv2.String("closed")}
		}
		out, err := f.v2.CreateAlias(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		id := awsv2.ToString(out.Alias.AliasId)
		all = append(all, id)
		if i%3 == 2 {
			terminal = append(terminal, id)
		} else {
			simple, blue = append(simple, id), append(blue, id)
		}
	}
	listV2 := func(in glv2.ListAliasesInput) []string {
		t.Helper()
		var ids []string
		p := glv2.NewListAliasesPaginator(f.v2, &in)
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("ListAliases %+v: %v", in, err)
			}
			if in.Limit != nil && len(out.Aliases) > int(*in.Limit) {
				t.Fatalf("ListAliases gave %d aliases with Limit %d", len(out.Aliases), *in.Limit)
			}
			for _, a := range out.Aliases {
				ids = append(ids, awsv2.ToString(a.AliasId))
			}
		}
		return ids
	}
	listV1 := func(in glv1.ListAliasesInput) []string {
		t.Helper()
		var ids []string
		err := f.v1.ListAliasesPagesWithContext(ctx, &in, func(out *glv1.ListAliasesOutput, _ bool) bool {
			for _, a := range out.Aliases {
				ids = append(ids, awsv1.StringValue(a.AliasId))
			}
			return true
		})
		if err != nil {
			t.Fatalf("ListAliases (v1) %+v: %v", in, err)
		}
		return ids
	}
	eq := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: got %v, want %v", what, got, want)
				return
			}
		}
	}
	eq("all", listV2(glv2.ListAliasesInput{}), all)
	eq("all, pages of 2", listV2(glv2.ListAliasesInput{Limit: awsv2.Int32(2)}), all)
	eq("all, pages of 3 (v1)", listV1(glv1.ListAliasesInput{Limit: awsv1.Int64(3)}), all)
	eq("SIMPLE", listV2(glv2.ListAliasesInput{RoutingStrategyType: types.RoutingStrategyTypeSimple, Limit: awsv2.Int32(2)}), simple)
	eq("TERMINAL (v1)", listV1(glv1.ListAliasesInput{RoutingStrategyType: awsv1.String("TERMINAL"), Limit: awsv1.Int64(1)}), terminal)
	eq("Name blue", listV2(glv2.ListAliasesInput{Name: awsv2.String("blue"), Limit: awsv2.Int32(4)}), blue)
	eq("Name red and SIMPLE", listV2(glv2.ListAliasesInput{Name: awsv2.String("red"), RoutingStrategyType: types.RoutingStrategyTypeSimple}), nil)
	eq("Name matches exactly", listV1(glv1.ListAliasesInput{Name: awsv1.String("blu")}), nil)

	_, err := f.v2.ListAliases(ctx, &glv2.ListAliasesInput{NextToken: awsv2.String("not-a-token")})
	wantV2[*types.InvalidRequestException](t, "ListAliases with a bogus NextToken", err)
	_, err = f.v1.ListAliasesWithContext(ctx, &glv1.ListAliasesInput{NextToken: awsv1.String("AQAB")})
	wantV1(t, "ListAliases with a bogus NextToken (v1)", err, "InvalidRequestException")
}

// TestAliasTags tags aliases through both SDKs.
func TestAliasTags(t *testing.T) {
	f := newAliasFixture(t)
	ctx := f.ctx
	out, err := f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("tagged"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeTerminal, Message: awsv2.String("m")},
		Tags:            []types.Tag{{Key: awsv2.String("team"), Value: awsv2.String("frogs")}}})
	if err != nil {
		t.Fatal(err)
	}
	aliasARN := awsv2.ToString(out.Alias.AliasArn)
	list := func() string {
		t.Helper()
		l, err := f.v1.ListTagsForResourceWithContext(ctx, &glv1.ListTagsForResourceInput{ResourceARN: awsv1.String(aliasARN)})
		if err != nil {
			t.Fatalf("ListTagsForResource: %v", err)
		}
		s := ""
		for _, tg := range l.Tags {
			s += awsv1.StringValue(tg.Key) + "=" + awsv1.StringValue(tg.Value) + ";"
		}
		return s
	}
	if got := list(); got != "team=frogs;" {
		t.Errorf("tags from CreateAlias: %s", got)
	}
	if _, err := f.v2.TagResource(ctx, &glv2.TagResourceInput{ResourceARN: awsv2.String(aliasARN),
		Tags: []types.Tag{{Key: awsv2.String("env"), Value: awsv2.String("dev")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v1.UntagResourceWithContext(ctx, &glv1.UntagResourceInput{ResourceARN: awsv1.String(aliasARN),
		TagKeys: []*string{awsv1.String("team")}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "env=dev;" {
		t.Errorf("tags after TagResource and UntagResource: %s", got)
	}
	if _, err := f.v2.DeleteAlias(ctx, &glv2.DeleteAliasInput{AliasId: out.Alias.AliasId}); err != nil {
		t.Fatal(err)
	}
	_, err = f.v2.ListTagsForResource(ctx, &glv2.ListTagsForResourceInput{ResourceARN: awsv2.String(aliasARN)})
	wantV2[*types.NotFoundException](t, "ListTagsForResource of a deleted alias", err)
	_, err = f.v2.TagResource(ctx, &glv2.TagResourceInput{ResourceARN: awsv2.String(aliasARN),
		Tags: []types.Tag{{Key: awsv2.String("k"), Value: awsv2.String("v")}}})
	wantV2[*types.NotFoundException](t, "TagResource of a deleted alias", err)
}

// TestAliasOfDeletedFleet checks that deleting a fleet leaves its aliases
// alone: ResolveAlias still names the fleet, and a game session through
// the alias answers what one naming the fleet would.
func TestAliasOfDeletedFleet(t *testing.T) {
	f := newAliasFixture(t)
	ctx := f.ctx
	out, err := f.v2.CreateAlias(ctx, &glv2.CreateAliasInput{Name: awsv2.String("orphan"),
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String(f.fleetID)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.v2.DeleteFleet(ctx, &glv2.DeleteFleetInput{FleetId: awsv2.String(f.fleetID)}); err != nil {
		t.Fatalf("DeleteFleet: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := f.v2.CreateGameSession(ctx, &glv2.CreateGameSessionInput{AliasId: out.Alias.AliasId,
			MaximumPlayerSessionCount: awsv2.Int32(2), Location: awsv2.String("custom-aliases")})
		var nf *types.NotFoundException
		var st *types.InvalidFleetStatusException
		if errors.As(err, &nf) {
			break
		}
		if !errors.As(err, &st) {
			t.Fatalf("CreateGameSession through the alias of a deleted fleet: %v, want InvalidFleetStatusException, then NotFoundException", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet is still not gone: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for time to pass
	}
	r, err := f.v2.ResolveAlias(ctx, &glv2.ResolveAliasInput{AliasId: out.Alias.AliasId})
	if err != nil || awsv2.ToString(r.FleetId) != f.fleetID {
		t.Errorf("ResolveAlias after the fleet was deleted: %v %+v", err, r)
	}
	// It cannot be pointed at the deleted fleet again.
	_, err = f.v2.UpdateAlias(ctx, &glv2.UpdateAliasInput{AliasId: out.Alias.AliasId,
		RoutingStrategy: &types.RoutingStrategy{Type: types.RoutingStrategyTypeSimple, FleetId: awsv2.String(f.fleetID)}})
	wantV2[*types.InvalidRequestException](t, "UpdateAlias onto a deleted fleet", err)
}
