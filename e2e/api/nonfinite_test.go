package api_test

import (
	"context"
	"math"
	"net/http"
	"testing"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// TestNonFiniteThroughSDK: aws-sdk-go-v2 sends a NaN or infinite Threshold
// in RPC v2 CBOR as it is; Hoist answers 400 SerializationException
// before the operation runs (before the fix the infinities reached the
// operation, and with an existing fleet the store and the JSON encoder,
// which cannot hold them: the 500 of issue 12).
func TestNonFiniteThroughSDK(t *testing.T) {
	h := startHoist(t)
	c := newV2(h)
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := c.PutScalingPolicy(context.Background(), &glv2.PutScalingPolicyInput{
			FleetId: awsv2.String("fleet-00000000-0000-0000-0000-000000000000"), Name: awsv2.String("p"),
			MetricName: types.MetricNamePercentAvailableGameSessions, ScalingAdjustment: awsv2.Int32(1),
			ScalingAdjustmentType: types.ScalingAdjustmentTypeChangeInCapacity, Threshold: awsv2.Float64(v),
			ComparisonOperator: types.ComparisonOperatorTypeLessThanThreshold, EvaluationPeriods: awsv2.Int32(1),
		})
		o := v2Outcome(err)
		if o.status != http.StatusBadRequest || o.code != "SerializationException" {
			t.Errorf("Threshold %v: got %v, want 400 SerializationException", v, o)
		}
	}
}
