package protocol

import (
	"bytes"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
)

// TestEmptyListsAreSent: an absent (nil) list is omitted, an empty one is
// sent as [] in both protocols, so that boto3 users reading
// response["Tags"] of an untagged resource find an empty list, as on
// GameLift.
func TestEmptyListsAreSent(t *testing.T) {
	for _, c := range []codec{jsonCodec{}, cborCodec{}} {
		for _, tc := range []struct {
			name string
			out  *api.ListTagsForResourceResponse
			want string
		}{
			{"empty", &api.ListTagsForResourceResponse{Tags: []api.Tag{}}, map[string]string{"awsJson1_1": `{"Tags":[]}`, "rpcv2Cbor": "\xa1dTags\x80"}[c.name()]},
			{"absent", &api.ListTagsForResourceResponse{}, map[string]string{"awsJson1_1": `{}`, "rpcv2Cbor": "\xa0"}[c.name()]},
		} {
			var b bytes.Buffer
			if err := c.encode(&b, tc.out); err != nil {
				t.Fatal(err)
			}
			if got := bytes.TrimSpace(b.Bytes()); string(got) != tc.want {
				t.Errorf("%s %s: %q, want %q", c.name(), tc.name, got, tc.want)
			}
		}
	}
}
