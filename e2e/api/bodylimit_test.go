//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against
package api_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

// TestOperationBodyLimit: a body over what its operation's input can take
// within the model's limits (DescribeGameSessionPlacement: a PlacementId of
// at most 48 characters; 64 KiB at least) is refused 413
// RequestEntityTooLargeException before it is read, and both SDKs report
// that code and status, not a connection error; a value over its length
// constraint within that bound is still the field's validation error.
// Before, a 1 MB PlacementId was read whole and answered as a validation
// error.
func TestOperationBodyLimit(t *testing.T) {
	h := startHoist(t)
	ctx := hoisttest.Context(t, time.Minute)
	v2, v1 := newV2(h), newV1(h, &awsv1.Config{DisableParamValidation: awsv1.Bool(true)})
	huge := strings.Repeat("p", 1_000_000)

	_, err := v2.DescribeGameSessionPlacement(ctx, &glv2.DescribeGameSessionPlacementInput{PlacementId: awsv2.String(huge)})
	var ae smithy.APIError
	var re *smithyhttp.ResponseError
	if !errors.As(err, &ae) || ae.ErrorCode() != "RequestEntityTooLargeException" || !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusRequestEntityTooLarge {
		t.Errorf("aws-sdk-go-v2, 1 MB PlacementId: %v, want 413 RequestEntityTooLargeException", err)
	} else if !strings.Contains(ae.ErrorMessage(), "DescribeGameSessionPlacement") {
		t.Errorf("message %q does not name the operation", ae.ErrorMessage())
	}
	_, err = v1.DescribeGameSessionPlacementWithContext(ctx, &glv1.DescribeGameSessionPlacementInput{PlacementId: awsv1.String(huge)})
	var rf awserr.RequestFailure
	if !errors.As(err, &rf) || rf.Code() != "RequestEntityTooLargeException" || rf.StatusCode() != http.StatusRequestEntityTooLarge {
		t.Errorf("aws-sdk-go (JSON), 1 MB PlacementId: %v, want 413 RequestEntityTooLargeException", err)
	}
	_, err = v2.DescribeGameSessionPlacement(ctx, &glv2.DescribeGameSessionPlacementInput{PlacementId: awsv2.String(huge[:1000])})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequestException" || !strings.Contains(ae.ErrorMessage(), "PlacementId") {
		t.Errorf("1,000-character PlacementId: %v, want the field's validation error", err)
	}
	// Hoist still answers on the same client.
	if _, err := v2.ListBuilds(ctx, &glv2.ListBuildsInput{}); err != nil {
		t.Errorf("ListBuilds after the refusals: %v", err)
	}
}
