package sigv4

import (
	"testing"
	"time"
)

// FuzzParseAmzDate: parseAmzDate agrees with time.Parse(TimeFormat) on
// strings of TimeFormat's length, and rejects every other length.
func FuzzParseAmzDate(f *testing.F) {
	for _, s := range []string{"20261123T094155Z", "20240229T235959Z", "20230229T000000Z", "20261323T000000Z",
		"20261123T246000Z", "20261123T235960Z", "20261100T000000Z", "00000101T000000Z", "2026-1123T094155Z", "20261123T094155"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseAmzDate(s)
		want, err := time.Parse(TimeFormat, s)
		wantOK := err == nil && len(s) == len(TimeFormat)
		if ok != wantOK || ok && !got.Equal(want) {
			t.Fatalf("parseAmzDate(%q) = %v, %v; time.Parse: %v, %v", s, got, ok, want, err)
		}
	})
}

// FuzzValidScopeDate: validScopeDate agrees with time.Parse(DateFormat) on
// strings of DateFormat's length, and rejects every other length.
func FuzzValidScopeDate(f *testing.F) {
	for _, s := range []string{"20261123", "20240229", "20230229", "20261323", "20261100", "00000101", "2026-112",
		"2026112", "202611231", "19000229", "20000229", "20261131", "20261231"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := time.Parse(DateFormat, s)
		if want := err == nil && len(s) == len(DateFormat); validScopeDate(s) != want {
			t.Fatalf("validScopeDate(%q) = %v; time.Parse: %v", s, !want, err)
		}
	})
}
