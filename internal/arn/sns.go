package arn

import "errors"

// SNS topic ARN bounds: a topic name is 1 to 256 letters, digits, '-' and
// '_' (a FIFO topic's name ends in ".fifo", within the 256), and
// GameLift's NotificationTarget is at most 300 characters.
const (
	maxSNSTopicARN  = 300
	maxSNSTopicName = 256
)

// CheckSNSTopic returns nil when s is an SNS topic ARN,
// arn:<partition>:sns:<region>:<account>:<topic>: partition and region
// lower-case letters, digits and '-' (neither empty), account 12 digits,
// topic as SNS names them. Otherwise its error says what is wrong.
func CheckSNSTopic(s string) error {
	if len(s) > maxSNSTopicARN {
		return errors.New("longer than 300 characters")
	}
	parts, ok := splitColons(s)
	switch {
	case !ok || parts[0] != "arn" || parts[2] != "sns":
		return errors.New("not arn:<partition>:sns:<region>:<account>:<topic>")
	case !lowerDash(parts[1]):
		return errors.New("the partition must be lower-case letters, digits and '-'")
	case !lowerDash(parts[3]):
		return errors.New("the region must be lower-case letters, digits and '-'")
	case len(parts[4]) != 12 || !allDigits(parts[4]):
		return errors.New("the account must be 12 digits")
	case !topicName(parts[5]):
		return errors.New("the topic name must be 1 to 256 letters, digits, '-' and '_' (a FIFO topic's ending in .fifo)")
	}
	return nil
}

// splitColons splits s into exactly six ':'-separated parts.
func splitColons(s string) ([6]string, bool) {
	var out [6]string
	n := 0
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		if n == 5 {
			return out, false
		}
		out[n], n, start = s[start:i], n+1, i+1
	}
	out[n] = s[start:]
	return out, n == 5
}

func lowerDash(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// topicName reports whether s is an SNS topic name.
func topicName(s string) bool {
	if len(s) == 0 || len(s) > maxSNSTopicName {
		return false
	}
	if len(s) > len(".fifo") && s[len(s)-len(".fifo"):] == ".fifo" {
		s = s[:len(s)-len(".fifo")]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
