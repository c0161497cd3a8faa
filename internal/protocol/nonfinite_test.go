package protocol

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// TestNonFiniteNumbers: a NaN or an infinity where a GameLift input takes
// a number (PutScalingPolicy's Threshold, a timestamp) is the client's
// error, 400 SerializationException, in both protocols: Hoist could not
// store it faithfully nor send it back in AWS JSON.
func TestNonFiniteNumbers(t *testing.T) {
	s := newTestServer(t, Options{})
	for name, v := range map[string]float64{"NaN": math.NaN(), "+Inf": math.Inf(1), "-Inf": math.Inf(-1)} {
		t.Run("cbor/Threshold/"+name, func(t *testing.T) {
			body := map[string]any{"Name": "p", "FleetId": "fleet-1", "MetricName": "PercentAvailableGameSessions",
				"ScalingAdjustment": 1, "ScalingAdjustmentType": "ChangeInCapacity", "Threshold": v,
				"ComparisonOperator": "LessThanThreshold", "EvaluationPeriods": 1}
			r := s.do(t, http.MethodPost, cborPath+"PutScalingPolicy", cborHeaders(), cborBody(t, body))
			checkCBORError(t, r, http.StatusBadRequest, "SerializationException", "not a finite number")
		})
		t.Run("cbor/timestamp/"+name, func(t *testing.T) {
			body := map[string]any{"FleetId": "fleet-1", "StartTime": cbor.Tag{Number: 1, Content: v}}
			r := s.do(t, http.MethodPost, cborPath+"DescribeFleetEvents", cborHeaders(), cborBody(t, body))
			checkCBORError(t, r, http.StatusBadRequest, "SerializationException", "")
		})
	}
	// JSON has no NaN; a number beyond a double's range would be an
	// infinity.
	for _, lit := range []string{"1e400", "-1e400", "NaN"} {
		t.Run("json/Threshold/"+lit, func(t *testing.T) {
			body := `{"Name":"p","FleetId":"fleet-1","MetricName":"PercentAvailableGameSessions","ScalingAdjustment":1,` +
				`"ScalingAdjustmentType":"ChangeInCapacity","ComparisonOperator":"LessThanThreshold","EvaluationPeriods":1,"Threshold":` + lit + `}`
			r := s.do(t, http.MethodPost, "/", jsonHeaders("PutScalingPolicy"), strings.NewReader(body))
			checkJSONError(t, r, http.StatusBadRequest, "SerializationException", "")
		})
		t.Run("json/timestamp/"+lit, func(t *testing.T) {
			body := `{"FleetId":"fleet-1","StartTime":` + lit + `}`
			r := s.do(t, http.MethodPost, "/", jsonHeaders("DescribeFleetEvents"), strings.NewReader(body))
			checkJSONError(t, r, http.StatusBadRequest, "SerializationException", "")
		})
	}
}
