package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// SNS's HTTP(S) notification, for webhooks configured with "sns+": what a
// receiver written for an SNS HTTP(S) subscription expects, with the event
// as its Message (docs/events.md, "SNS's envelope").
const (
	// SNSSignatureVersion is the notification's SignatureVersion: not
	// SNS's 1 or 2, since Hoist does not sign with SNS's certificate; the
	// signature is Hoist's, in the X-Hoist-Signature header, over the
	// whole body.
	SNSSignatureVersion = "hoist-" + signatureVersion
	// snsTimestamp is the layout of SNS's Timestamp (UTC, milliseconds).
	snsTimestamp = "2006-01-02T15:04:05.000Z"
	// snsContentType is what SNS sends by default.
	snsContentType = "text/plain; charset=UTF-8"
)

// SNS's headers on a notification.
const (
	HeaderSNSMessageType     = "X-Amz-Sns-Message-Type"
	HeaderSNSMessageID       = "X-Amz-Sns-Message-Id"
	HeaderSNSTopicArn        = "X-Amz-Sns-Topic-Arn"
	HeaderSNSSubscriptionArn = "X-Amz-Sns-Subscription-Arn"
)

// SNSNotification is the body of an SNS HTTP(S) notification, with SNS's
// field names, in SNS's order. Subject is left out, as SNS leaves it out
// of a message published without one.
type SNSNotification struct {
	Type string
	// MessageId is the event's id: the same on every retry and for every
	// URL of the topic, as SNS keeps one message's ID.
	MessageId string
	TopicArn  string
	// Message is the event (its envelope), as a JSON string.
	Message string
	// Timestamp is the event's time.
	Timestamp        string
	SignatureVersion string
	// Signature, SigningCertURL and UnsubscribeURL are empty: the request
	// is signed in X-Hoist-Signature, there is no certificate, and a
	// webhook is removed from --webhooks, not unsubscribed.
	Signature      string
	SigningCertURL string
	UnsubscribeURL string
}

// snsBody wraps an event's envelope in SNS's notification for topic.
func snsBody(envelope []byte, topic string) ([]byte, SNSNotification, error) {
	var ev struct {
		ID   string `json:"id"`
		Time string `json:"time"`
	}
	if err := json.Unmarshal(envelope, &ev); err != nil {
		return nil, SNSNotification{}, fmt.Errorf("event envelope: %w", err)
	}
	t, err := time.Parse(time.RFC3339, ev.Time)
	if err != nil {
		return nil, SNSNotification{}, fmt.Errorf("event %s time: %w", ev.ID, err)
	}
	n := SNSNotification{Type: "Notification", MessageId: ev.ID, TopicArn: topic, Message: string(envelope),
		Timestamp: t.UTC().Format(snsTimestamp), SignatureVersion: SNSSignatureVersion}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the Message as published, as SNS sends it
	if err := enc.Encode(n); err != nil {
		return nil, SNSNotification{}, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), n, nil
}

// setSNSHeaders sets SNS's headers of notification n to url.
func setSNSHeaders(h http.Header, n SNSNotification, url string) {
	h.Set("Content-Type", snsContentType)
	h.Set(HeaderSNSMessageType, n.Type)
	h.Set(HeaderSNSMessageID, n.MessageId)
	h.Set(HeaderSNSTopicArn, n.TopicArn)
	h.Set(HeaderSNSSubscriptionArn, SubscriptionArn(n.TopicArn, url))
}

// SubscriptionArn is the subscription ARN Hoist sends for url's webhook
// of topic (SNS's form, topic ARN ':' UUID): the same on every replica
// and across restarts, as it comes from a hash of the two.
func SubscriptionArn(topic, url string) string {
	h := sha256.Sum256([]byte(topic + "\n" + url))
	h[6] = h[6]&0x0f | 0x80 // the UUID's version nibble: 8, custom
	h[8] = h[8]&0x3f | 0x80 // RFC 9562 variant
	x := hex.EncodeToString(h[:16])
	return topic + ":" + x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}
