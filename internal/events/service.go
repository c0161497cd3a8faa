package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/ids"
	"github.com/hoistgg/hoist/internal/store"
)

// Record kinds. Everything about an event and its delivery lives in the
// store, so any replica can deliver or stream it after a restart.
const (
	// kindEvent holds one published event: ID its id, Parent its order
	// key, Key keyPending while a delivery of it is pending, else
	// keyReleased, Rank the publish time (Unix ns, for retention); its
	// store Seq orders the live stream's replay (read.go).
	kindEvent store.Kind = "Event"
	// kindOrder holds the next sequence number of one order key (ID).
	kindOrder store.Kind = "EventOrder"
	// kindDelivery is one event still to be delivered to one webhook:
	// Parent its stream, Key the event's id, Rank its sequence in the
	// order key.
	kindDelivery store.Kind = "EventDelivery"
	// kindStream is one (webhook URL, order key) with deliveries
	// pending: Parent the URL's key (urlKey; "" in records of an older
	// Hoist, until the housekeeping adopts them), Key keyDue, Rank when
	// the head delivery is next tried (Unix ns).
	kindStream store.Kind = "EventStream"
)

// Keys of the stream records.
const (
	keyDue      = "due"
	keyPending  = "pending"
	keyReleased = "released"
)

// Defaults of Timings.
const (
	DefaultInterval       = time.Second
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultGiveUp         = 24 * time.Hour
	DefaultRetention      = time.Hour
	DefaultRequestTimeout = 10 * time.Second
)

// Timings are the delivery loop's timers (zero: the default).
type Timings struct {
	// Interval is how often the loop looks for due deliveries.
	Interval time.Duration
	// Backoff is the wait after a delivery's first failure; it doubles
	// with each further failure up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// GiveUp is how long an event is retried before it is dropped.
	GiveUp time.Duration
	// Retention is how long an event stays in the store (for the live
	// stream's replay) once it has no delivery pending.
	Retention time.Duration
	// RequestTimeout bounds one webhook request.
	RequestTimeout time.Duration
}

// DefaultMaxEvents is the default of Config.MaxEvents.
const DefaultMaxEvents = 10000

// Webhook is one URL events are POSTed to.
type Webhook struct {
	// URL is the http:// or https:// URL requested (and signed).
	URL string
	// SNS: the body is SNS's HTTP(S) notification, with the event as its
	// Message, instead of the event itself.
	SNS bool
}

// Config configures New.
type Config struct {
	Store           store.Store
	Region, Account string
	// Webhooks maps an SNS topic ARN to the webhooks its events are POSTed
	// to. A URL has one format (internal/config refuses two); given with
	// two, its first topic's in sorted order counts.
	Webhooks map[string][]Webhook
	// MaxEvents bounds the events the outbox holds, delivered (kept for
	// the live stream's replay) or not; past it the delivered ones are
	// deleted first, then the oldest undelivered (0: DefaultMaxEvents).
	MaxEvents int
	// Secret signs webhook requests (see Sign).
	Secret []byte
	// Client sends webhook requests (default: one that follows no
	// redirects, with Timings.RequestTimeout).
	Client    *http.Client
	Now       func() time.Time
	NewID     func() string
	Logger    *slog.Logger
	ReplicaID string
	Timings   Timings
}

// Service is the Publisher: it writes events and their deliveries to the
// store (Publish), delivers them to webhooks (Run) and reads them for the
// live stream (NewReader).
type Service struct {
	cfg Config
	t   Timings
	log *slog.Logger
	// topics maps a topic ARN to its URLs (each once); webhooks holds
	// every configured URL (in the sorted order of their first topic),
	// urls and keys the same by URL and by urlKey.
	topics   map[string][]string
	webhooks []*webhook
	urls     map[string]*webhook
	keys     map[string]*webhook

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on each Publish

	counters counters
	drops    dropLog

	// afterSend, for tests, runs between a delivery the receiver
	// acknowledged and the recording of it.
	afterSend func()
}

// webhook is one configured URL and its delivery loop.
type webhook struct {
	Webhook
	// key is urlKey(URL): the Parent of its streams and the suffix of its
	// loop's lease.
	key string
	// topic is the first topic it was given for, the TopicArn of its
	// deliveries that name none (written by an older Hoist).
	topic string
	// kick wakes its loop after a Publish on this replica.
	kick chan struct{}
}

var _ Publisher = (*Service)(nil)

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = ids.UUID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := cfg.Timings
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Interval, DefaultInterval)
	def(&t.Backoff, DefaultBackoff)
	def(&t.MaxBackoff, DefaultMaxBackoff)
	def(&t.GiveUp, DefaultGiveUp)
	def(&t.Retention, DefaultRetention)
	def(&t.RequestTimeout, DefaultRequestTimeout)
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: t.RequestTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	// Every replica records its publishes in the change feed, which the
	// live streams of all of them follow (read.go).
	if cfg.Store != nil {
		cfg.Store.Watch(kindLive)
	}
	s := &Service{cfg: cfg, t: t, log: cfg.Logger, topics: map[string][]string{},
		urls: map[string]*webhook{}, keys: map[string]*webhook{}, changed: make(chan struct{})}
	topics := slices.Sorted(maps.Keys(cfg.Webhooks))
	for _, topic := range topics {
		for _, w := range cfg.Webhooks[topic] {
			if slices.Contains(s.topics[topic], w.URL) {
				continue // a URL given twice for a topic gets each event once
			}
			s.topics[topic] = append(s.topics[topic], w.URL)
			if s.urls[w.URL] == nil {
				hw := &webhook{Webhook: w, key: urlKey(w.URL), topic: topic, kick: make(chan struct{}, 1)}
				s.webhooks = append(s.webhooks, hw)
				s.urls[w.URL], s.keys[hw.key] = hw, hw
			}
		}
	}
	return s
}

// Envelope is an event as GameLift sends it (and Hoist POSTs it).
type Envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// A kindEvent record's Data is the Envelope, exactly as delivered. Records
// an older Hoist wrote hold a stored instead (with the topic, order key
// and sequence the record's other columns and the deliveries hold too);
// eventBody reads both.
type stored struct {
	Body json.RawMessage
}

// storedPrefix starts the Data of a stored, never an Envelope's (whose
// first field is "version").
var storedPrefix = []byte(`{"Body":`)

// eventBody returns the envelope a kindEvent record's data holds.
func eventBody(data []byte) (json.RawMessage, error) {
	if !bytes.HasPrefix(data, storedPrefix) {
		return data, nil
	}
	var ev stored
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, err
	}
	return ev.Body, nil
}

// delivery is a kindDelivery record's Data.
type delivery struct {
	EventID string
	URL     string
	// Topic is the topic the event was published to (the TopicArn of
	// SNS's envelope); "" in records of an older Hoist.
	Topic string `json:",omitempty"`
}

// stream is a kindStream record's Data.
type stream struct {
	URL       string
	OrderKey  string
	Attempts  int       `json:",omitempty"`
	FirstFail time.Time `json:",omitzero"`
	LastError string    `json:",omitempty"`
}

// Publish writes e, in its envelope, to tx, with a delivery to every
// webhook of e.Topic.
func (s *Service) Publish(ctx context.Context, tx store.Tx, e Event) error {
	if e.ID == "" {
		e.ID = s.cfg.NewID()
	}
	if e.Time.IsZero() {
		e.Time = s.cfg.Now()
	}
	if e.OrderKey == "" && len(e.Resources) > 0 {
		e.OrderKey = e.Resources[0]
	}
	if e.OrderKey == "" {
		e.OrderKey = e.ID
	}
	detail := e.Detail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	body, err := json.Marshal(Envelope{Version: "0", ID: e.ID, DetailType: e.DetailType, Source: "aws.gamelift",
		Account: s.cfg.Account, Time: e.Time.UTC().Format(time.RFC3339), Region: s.cfg.Region,
		Resources: resources, Detail: detail})
	if err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	// The order key's sequence orders the event's deliveries; without
	// webhooks it is not taken (every event about one resource would read
	// and write it: on PostgreSQL, concurrent publishers would conflict).
	urls := s.topics[e.Topic]
	key, seq := keyReleased, int64(0)
	if len(urls) > 0 {
		key = keyPending
		if seq, err = nextSeq(ctx, tx, e.OrderKey); err != nil {
			return err
		}
	}
	// The event's ID is new (cfg.NewID), so its records go without an
	// answer of their own (store.InsertNew: on PostgreSQL with the
	// transaction's next statement, not a round trip each).
	if err := store.InsertNew(ctx, tx, store.Record{Kind: kindEvent, ID: e.ID, Parent: e.OrderKey, Key: key,
		Rank: e.Time.UnixNano(), Data: body}); err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	for _, u := range urls {
		if err := s.addDelivery(ctx, tx, u, e.Topic, e.OrderKey, e.ID, seq); err != nil {
			return err
		}
	}
	// Last, so that its Seq is above the event's and its deliveries' (a
	// replay after it starts after the event: read.go).
	if err := store.InsertNew(ctx, tx, store.Record{Kind: kindLive, ID: e.ID}); err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	s.notify(urls)
	return nil
}

// Orders reports whether Publish, for an event of topic, takes the next
// sequence number of its order key (a record that every event about one
// resource reads and writes): it does when webhooks receive topic. A
// caller in a Claim (store.Store.Claim), which would not hold that record
// when it does not exist yet, publishes such an event in an Update.
func (s *Service) Orders(topic string) bool { return len(s.topics[topic]) > 0 }

// nextSeq takes the next sequence number of key.
func nextSeq(ctx context.Context, tx store.Tx, key string) (int64, error) {
	var o struct{ Next int64 }
	_, err := store.GetJSON(ctx, tx, kindOrder, key, &o)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	seq := o.Next
	o.Next++
	return seq, store.PutJSON(ctx, tx, store.Record{Kind: kindOrder, ID: key}, o)
}

// urlKey names a webhook URL in its streams' IDs and Parent, and in its
// loop's lease: 16 hex digits of its SHA-256.
func urlKey(url string) string {
	h := sha256.Sum256([]byte(url))
	return hex.EncodeToString(h[:8])
}

// streamID names the delivery stream of url and an order key: the URL's
// key, a space, the order key (so a URL's streams are adjacent in ID
// order).
func streamID(url, orderKey string) string {
	return urlKey(url) + " " + orderKey
}

// addDelivery writes the delivery of an event to url, and its stream
// (parented by the URL's key) unless it is pending already.
func (s *Service) addDelivery(ctx context.Context, tx store.Tx, url, topic, orderKey, eventID string, seq int64) error {
	sid := streamID(url, orderKey)
	data, _ := json.Marshal(delivery{EventID: eventID, URL: url, Topic: topic})
	if err := tx.Insert(ctx, store.Record{Kind: kindDelivery, ID: sid + "/" + pad(seq), Parent: sid,
		Key: eventID, Rank: seq, Data: data}); err != nil {
		return fmt.Errorf("event %s delivery: %w", eventID, err)
	}
	_, err := tx.Get(ctx, kindStream, sid)
	if errors.Is(err, store.ErrNotFound) { // else it is due already, or backing off
		return store.PutJSON(ctx, tx, store.Record{Kind: kindStream, ID: sid, Parent: urlKey(url), Key: keyDue,
			Rank: s.cfg.Now().UnixNano()}, stream{URL: url, OrderKey: orderKey})
	}
	return err
}

// pad writes n so that byte order is numeric order.
func pad(n int64) string {
	s := strconv.FormatInt(n, 10)
	const width = 19
	if len(s) < width {
		s = "0000000000000000000"[:width-len(s)] + s
	}
	return s
}

// notify wakes the live streams and the delivery loops of urls on this
// replica.
func (s *Service) notify(urls []string) {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	for _, u := range urls {
		select {
		case s.urls[u].kick <- struct{}{}:
		default:
		}
	}
}

// Changed returns a channel closed at the next Publish on this replica
// (the live stream also polls, for events other replicas publish).
func (s *Service) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
