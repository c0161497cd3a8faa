package protocol

import "testing"

func TestCBORErrorType(t *testing.T) {
	tests := map[string]string{
		"ConflictException":             "com.amazonaws.gamelift#ConflictException",
		"InvalidRequestException":       "com.amazonaws.gamelift#InvalidRequestException",
		"InternalServiceException":      "com.amazonaws.gamelift#InternalServiceException",
		"UnsupportedRegionException":    "com.amazonaws.gamelift#UnsupportedRegionException",
		"UnsupportedOperationException": "UnsupportedOperationException",
		CodeSerialization:               CodeSerialization,
		"UnrecognizedClientException":   "UnrecognizedClientException",
	}
	for code, want := range tests {
		if got := cborErrorType(code); got != want {
			t.Errorf("cborErrorType(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestWireTypeName(t *testing.T) {
	tests := map[string]string{
		"*int32": "an integer", "int64": "a long integer", "*float64": "a number", "*bool": "a boolean",
		"string": "a string", "[]uint8": "a blob", "api.Timestamp": "a timestamp", "[]api.Tag": "a list",
		"map[string]string": "a map", "api.SortOrder": "a SortOrder",
	}
	for in, want := range tests {
		if got := wireTypeName(in); got != want {
			t.Errorf("wireTypeName(%q) = %q, want %q", in, got, want)
		}
	}
}
