package server

import (
	"errors"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

func TestSDKError(t *testing.T) {
	other := errors.New("disk full")
	for _, tc := range []struct {
		in     error
		status int
	}{
		{api.NewNotFoundException("no such ticket"), 404},
		{api.NewInvalidRequestException("bad"), 400},
		{api.NewInternalServiceException("oops"), 500},
		{api.NewLimitExceededException("too many"), 429},
	} {
		var se *hosting.SDKError
		if !errors.As(sdkError(tc.in), &se) || se.Status != tc.status || se.Message == "" {
			t.Errorf("sdkError(%v) = %v, want status %d", tc.in, se, tc.status)
		}
	}
	if sdkError(nil) != nil || sdkError(other) != other {
		t.Error("sdkError must leave nil and non-API errors alone")
	}
}
