package fleetiq_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

func tag(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

func listTags(t *testing.T, c client, arn string) string {
	t.Helper()
	out, err := c.ListTagsForResource(ctx(t), &gl.ListTagsForResourceInput{ResourceARN: aws.String(arn)})
	if err != nil {
		t.Fatalf("ListTagsForResource %s: %v", arn, err)
	}
	return tagString(out.Tags)
}

func TestGameServerGroupTags(t *testing.T) {
	t.Parallel()
	eachClientParallel(t, func(t *testing.T, c client) {
		name := uniq("tags-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:])
		in := groupInput(name)
		in.Tags = []types.Tag{tag("team", "frogs")}
		if _, err := c.CreateGameServerGroup(ctx(t), in); err != nil {
			t.Fatal(err)
		}
		arn := groupARN(name)
		if got := listTags(t, c, arn); got != "team=frogs" {
			t.Errorf("tags given at creation: %s", got)
		}
		// Tagging adds keys and replaces values; the list keeps the order
		// in which keys were first added.
		if _, err := c.TagResource(ctx(t), &gl.TagResourceInput{ResourceARN: aws.String(arn),
			Tags: []types.Tag{tag("env", "dev"), tag("team", "toads")}}); err != nil {
			t.Fatal(err)
		}
		if got := listTags(t, c, arn); got != "team=toads,env=dev" {
			t.Errorf("after TagResource: %s", got)
		}
		// The ARN's Region and account are not compared (the
		// documentation's ARN form has no account).
		if got := listTags(t, c, "arn:aws:gamelift:us-west-2::gameservergroup/"+name); got != "team=toads,env=dev" {
			t.Errorf("by the account-less ARN: %s", got)
		}
		// Untagging removes keys; keys it does not have are ignored.
		if _, err := c.UntagResource(ctx(t), &gl.UntagResourceInput{ResourceARN: aws.String(arn), TagKeys: []string{"team", "nope"}}); err != nil {
			t.Fatal(err)
		}
		if got := listTags(t, c, arn); got != "env=dev" {
			t.Errorf("after UntagResource: %s", got)
		}

		// Errors.
		missing := groupARN(name + "-nope")
		_, err := c.TagResource(ctx(t), &gl.TagResourceInput{ResourceARN: aws.String(missing), Tags: []types.Tag{tag("a", "b")}})
		wantErr(t, err, "NotFoundException", missing)
		_, err = c.UntagResource(ctx(t), &gl.UntagResourceInput{ResourceARN: aws.String(missing), TagKeys: []string{"a"}})
		wantErr(t, err, "NotFoundException", missing)
		_, err = c.ListTagsForResource(ctx(t), &gl.ListTagsForResourceInput{ResourceARN: aws.String(missing)})
		wantErr(t, err, "NotFoundException", missing)
		_, err = c.ListTagsForResource(ctx(t), &gl.ListTagsForResourceInput{ResourceARN: aws.String("not-an-arn")})
		wantErr(t, err, "InvalidRequestException", "ResourceARN", "not-an-arn")
		_, err = c.TagResource(ctx(t), &gl.TagResourceInput{ResourceARN: aws.String(arn), Tags: []types.Tag{tag("aws:owner", "me")}})
		wantErr(t, err, "InvalidRequestException", "aws:owner")
		_, err = c.UntagResource(ctx(t), &gl.UntagResourceInput{ResourceARN: aws.String(arn), TagKeys: []string{"AWS:owner"}})
		wantErr(t, err, "InvalidRequestException", "AWS:owner")
		_, err = c.TagResource(ctx(t), &gl.TagResourceInput{ResourceARN: aws.String(arn), Tags: []types.Tag{tag("k", "1"), tag("k", "2")}})
		wantErr(t, err, "InvalidRequestException", "k")
		var many []types.Tag
		for i := range 50 {
			many = append(many, tag(fmt.Sprintf("k%02d", i), "v"))
		}
		_, err = c.TagResource(ctx(t), &gl.TagResourceInput{ResourceARN: aws.String(arn), Tags: many}) // 51 with env
		wantErr(t, err, "TaggingFailedException", arn, "50")
		if got := listTags(t, c, arn); got != "env=dev" {
			t.Errorf("after refused calls: %s", got)
		}
		in = groupInput(name + "-many")
		in.Tags = append(many, tag("k50", "v"))
		_, err = c.CreateGameServerGroup(ctx(t), in)
		wantErr(t, err, "InvalidRequestException", "Tags", "50")
		in.Tags = []types.Tag{tag("aws:x", "y")}
		_, err = c.CreateGameServerGroup(ctx(t), in)
		wantErr(t, err, "InvalidRequestException", "aws:x")
		if _, err := describeGroup(t, c, name+"-many"); code(err) != "NotFoundException" {
			t.Errorf("a refused create left a group: %v", err)
		}

		// A deleted group's tags go with it: a group created again under
		// the name starts without tags.
		if _, err := c.DeleteGameServerGroup(ctx(t), &gl.DeleteGameServerGroupInput{GameServerGroupName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		waitGroupStatus(t, c, name, types.GameServerGroupStatusDeleted)
		createGroup(t, c, name)
		if got := listTags(t, c, arn); got != "" {
			t.Errorf("tags of the re-created group: %s", got)
		}
	})
}
