package arn

import (
	"strings"
	"testing"
)

func TestCheckSNSTopic(t *testing.T) {
	good := []string{
		"arn:aws:sns:us-west-2:123456789012:placements",
		"arn:aws-cn:sns:cn-north-1:123456789012:My_Topic-1",
		"arn:aws:sns:us-east-1:123456789012:events.fifo",
		"arn:aws:sns:us-east-1:123456789012:" + strings.Repeat("t", 256),
	}
	for _, s := range good {
		if err := CheckSNSTopic(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		"":                                                               "not arn:",
		"placements":                                                     "not arn:",
		"arn:aws:sqs:us-west-2:123456789012:q":                           "not arn:",
		"arn:aws:sns:us-west-2:123456789012":                             "not arn:",
		"arn:aws:sns:us-west-2:123456789012:a:b":                         "not arn:",
		"arn::sns:us-west-2:123456789012:t":                              "partition",
		"arn:aws:sns::123456789012:t":                                    "region",
		"arn:aws:sns:US-WEST-2:123456789012:t":                           "region",
		"arn:aws:sns:us-west-2::t":                                       "account",
		"arn:aws:sns:us-west-2:12345678901x:t":                           "account",
		"arn:aws:sns:us-west-2:123456789012:":                            "topic name",
		"arn:aws:sns:us-west-2:123456789012:a/b":                         "topic name",
		"arn:aws:sns:us-west-2:123456789012:a.b":                         "topic name",
		"arn:aws:sns:us-west-2:123456789012:.fifo":                       "topic name",
		"arn:aws:sns:us-east-1:123456789012:" + strings.Repeat("t", 257): "topic name",
		"arn:aws:sns:us-east-1:123456789012:" + strings.Repeat("t", 270): "300",
	}
	for s, says := range bad {
		err := CheckSNSTopic(s)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want an error saying %q", s, err, says)
		}
	}
}

// FuzzCheckSNSTopic: an accepted ARN has six parts, service sns, a 12-digit
// account and at most 300 characters.
func FuzzCheckSNSTopic(f *testing.F) {
	f.Add("arn:aws:sns:us-west-2:123456789012:placements")
	f.Add("arn:aws:sns:us-west-2:123456789012:t.fifo")
	f.Add("arn:aws:sns::123456789012:t")
	f.Fuzz(func(t *testing.T, s string) {
		if CheckSNSTopic(s) != nil {
			return
		}
		parts := strings.Split(s, ":")
		if len(s) > 300 || len(parts) != 6 || parts[2] != "sns" || len(parts[4]) != 12 || parts[5] == "" {
			t.Fatalf("accepted %q", s)
		}
	})
}
