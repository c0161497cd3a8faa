package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/flexmatch"
)

// simTicket is one ticket of a simulation's tickets file.
type simTicket struct {
	ID string
	// Submitted is when the ticket enters the pool, from the start of the
	// simulation.
	Submitted time.Duration
	Players   []flexmatch.Player
}

// Limits of a tickets file: those of StartMatchmaking where GameLift has
// one, and a bound on the submission time so that simulated times stay
// far from time.Duration's range.
const (
	maxTicketIDLen   = 128
	maxTicketPlayers = 10
	maxPlayerIDLen   = 1024
	maxPlayerAttrs   = 10
	maxAttrName      = 1024
	maxStringValue   = 100
	maxStringList    = 100
	maxStringMap     = 10
	maxSubmittedAt   = 1_000_000 // seconds
	maxLatencyMS     = 1<<31 - 1
)

// ticketIDPattern is StartMatchmaking's TicketId pattern.
var ticketIDPattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+$`)

// ticketsError is an error in the tickets file, naming the ticket (by ID,
// else by index) and the field.
func ticketsError(ticket, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case ticket == "" && field == "":
		return fmt.Errorf("tickets file: %s", msg)
	case ticket == "":
		return fmt.Errorf("tickets file: %s: %s", field, msg)
	case field == "":
		return fmt.Errorf("tickets file: %s: %s", ticket, msg)
	}
	return fmt.Errorf("tickets file: %s: %s: %s", ticket, field, msg)
}

// decodeObject decodes a JSON object into its members, refusing unknown
// members (a typo such as "submitedAt" must not silently become a
// default).
func decodeObject(raw json.RawMessage, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := strictUnmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("must be a JSON object")
	}
	return m, unknownField(m, known...)
}

// unknownField is the error of the first member of m not in known.
func unknownField(m map[string]json.RawMessage, known ...string) error {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) {
			return fmt.Errorf("unknown field %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// strictUnmarshal is json.Unmarshal that also refuses null for the whole
// value.
func strictUnmarshal(raw json.RawMessage, v any) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("null")
	}
	return json.Unmarshal(raw, v)
}

// parseTickets parses a tickets file:
//
//	{"tickets": [{"ticketId": "t1", "submittedAt": 0,
//	  "players": [{"playerId": "p1",
//	    "attributes": {"skill": 10, "mode": "ctf", "roles": ["tank"], "ping": {"a": 1}},
//	    "latencies": {"us-east-1": 50}}]}]}
//
// and checks every ticket against the rule set (attribute types as
// declared) when rs is not nil. Errors name the ticket and the field. The
// result is in submission order (file order among equal times).
func parseTickets(data []byte, rs *flexmatch.RuleSet) ([]simTicket, error) {
	top, err := decodeObject(data, "tickets")
	if err != nil {
		return nil, ticketsError("", "", "%v", err)
	}
	var raws []json.RawMessage
	if err := strictUnmarshal(top["tickets"], &raws); err != nil {
		return nil, ticketsError("", "tickets", "must be a list of tickets")
	}
	if len(raws) == 0 {
		return nil, ticketsError("", "tickets", "at least one ticket is required")
	}
	tickets := make([]simTicket, 0, len(raws))
	ids := map[string]int{}
	players := map[string]string{}
	for i, raw := range raws {
		name := fmt.Sprintf("tickets[%d]", i)
		t, err := parseTicket(raw, name)
		if err != nil {
			return nil, err
		}
		if j, dup := ids[t.ID]; dup {
			return nil, ticketsError(t.ID, "ticketId", "also the ID of tickets[%d]", j)
		}
		ids[t.ID] = i
		for k, p := range t.Players {
			if other, dup := players[p.ID]; dup {
				return nil, ticketsError(t.ID, fmt.Sprintf("players[%d].playerId", k), "player %q is also on ticket %s", p.ID, other)
			}
			players[p.ID] = t.ID
		}
		if rs != nil {
			if err := rs.CheckTicket(flexmatch.Ticket{ID: t.ID, Players: t.Players}); err != nil {
				return nil, ticketsError(t.ID, "", "%v", err)
			}
		}
		tickets = append(tickets, t)
	}
	sort.SliceStable(tickets, func(i, j int) bool { return tickets[i].Submitted < tickets[j].Submitted })
	return tickets, nil
}

func parseTicket(raw json.RawMessage, name string) (simTicket, error) {
	var t simTicket
	var m map[string]json.RawMessage // members checked once the ID can name the ticket
	if err := strictUnmarshal(raw, &m); err != nil || m == nil {
		return t, ticketsError(name, "", "must be a JSON object")
	}
	idRaw, ok := m["ticketId"]
	if !ok {
		return t, ticketsError(name, "ticketId", "is required")
	}
	if err := strictUnmarshal(idRaw, &t.ID); err != nil {
		return t, ticketsError(name, "ticketId", "must be a string")
	}
	if t.ID == "" || len(t.ID) > maxTicketIDLen || !ticketIDPattern.MatchString(t.ID) {
		return t, ticketsError(name, "ticketId", "must be 1 to %d letters, digits, '-' and '.', got %q", maxTicketIDLen, t.ID)
	}
	name = t.ID
	if err := unknownField(m, "ticketId", "submittedAt", "players"); err != nil {
		return t, ticketsError(name, "", "%v", err)
	}
	subRaw, ok := m["submittedAt"]
	if !ok {
		return t, ticketsError(name, "submittedAt", "is required (seconds from the start of the simulation)")
	}
	var sub float64
	if err := strictUnmarshal(subRaw, &sub); err != nil || sub < 0 || sub > maxSubmittedAt || math.IsNaN(sub) {
		return t, ticketsError(name, "submittedAt", "must be a number of seconds from 0 to %d", maxSubmittedAt)
	}
	t.Submitted = time.Duration(math.Round(sub * float64(time.Second)))
	var praws []json.RawMessage
	if err := strictUnmarshal(m["players"], &praws); err != nil {
		return t, ticketsError(name, "players", "must be a list of players")
	}
	if len(praws) == 0 || len(praws) > maxTicketPlayers {
		return t, ticketsError(name, "players", "must hold 1 to %d players, got %d", maxTicketPlayers, len(praws))
	}
	for k, praw := range praws {
		p, err := parsePlayer(praw, name, fmt.Sprintf("players[%d]", k))
		if err != nil {
			return t, err
		}
		t.Players = append(t.Players, p)
	}
	return t, nil
}

func parsePlayer(raw json.RawMessage, ticket, field string) (flexmatch.Player, error) {
	var p flexmatch.Player
	m, err := decodeObject(raw, "playerId", "attributes", "latencies")
	if err != nil {
		return p, ticketsError(ticket, field, "%v", err)
	}
	if err := strictUnmarshal(m["playerId"], &p.ID); err != nil || p.ID == "" || len(p.ID) > maxPlayerIDLen {
		return p, ticketsError(ticket, field+".playerId", "is required: a string of 1 to %d characters", maxPlayerIDLen)
	}
	if a, ok := m["attributes"]; ok {
		var attrs map[string]json.RawMessage
		if err := strictUnmarshal(a, &attrs); err != nil {
			return p, ticketsError(ticket, field+".attributes", "must be an object of attribute values")
		}
		if len(attrs) > maxPlayerAttrs {
			return p, ticketsError(ticket, field+".attributes", "at most %d attributes, got %d", maxPlayerAttrs, len(attrs))
		}
		p.Attributes = make(map[string]flexmatch.Value, len(attrs))
		for _, k := range sortedKeys(attrs) {
			v := attrs[k]
			f := fmt.Sprintf("%s.attributes[%s]", field, k)
			if k == "" || len(k) > maxAttrName {
				return p, ticketsError(ticket, f, "an attribute name is 1 to %d characters", maxAttrName)
			}
			val, err := parseValue(v)
			if err != nil {
				return p, ticketsError(ticket, f, "%v", err)
			}
			p.Attributes[k] = val
		}
	}
	if l, ok := m["latencies"]; ok {
		var lat map[string]json.RawMessage
		if err := strictUnmarshal(l, &lat); err != nil {
			return p, ticketsError(ticket, field+".latencies", "must be an object of region: milliseconds")
		}
		p.Latencies = make(map[string]int, len(lat))
		for _, region := range sortedKeys(lat) {
			v := lat[region]
			var ms float64
			if region == "" || strictUnmarshal(v, &ms) != nil || ms < 1 || ms > maxLatencyMS || ms != math.Trunc(ms) {
				return p, ticketsError(ticket, fmt.Sprintf("%s.latencies[%s]", field, region), "must be a whole number of milliseconds from 1 to %d under a region name", maxLatencyMS)
			}
			p.Latencies[region] = int(ms)
		}
	}
	return p, nil
}

// parseValue reads an attribute value: a string, a number, a list of
// strings or an object of numbers.
func parseValue(raw json.RawMessage) (flexmatch.Value, error) {
	var v flexmatch.Value
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return v, fmt.Errorf("missing value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return v, fmt.Errorf("not a valid string")
		}
		if len(s) > maxStringValue {
			return v, fmt.Errorf("a string value is at most %d characters", maxStringValue)
		}
		v.S = &s
	case '[':
		var sl []*string
		if err := json.Unmarshal(raw, &sl); err != nil || slices.Contains(sl, nil) {
			return v, fmt.Errorf("a list value must hold only strings")
		}
		if len(sl) > maxStringList {
			return v, fmt.Errorf("a string list holds at most %d strings", maxStringList)
		}
		v.SL = make([]string, len(sl))
		for i, s := range sl {
			if len(*s) > maxStringValue {
				return v, fmt.Errorf("a string of a list is at most %d characters", maxStringValue)
			}
			v.SL[i] = *s
		}
	case '{':
		var sdm map[string]*float64
		if err := json.Unmarshal(raw, &sdm); err != nil {
			return v, fmt.Errorf("an object value must map strings to numbers")
		}
		if len(sdm) > maxStringMap {
			return v, fmt.Errorf("a string-number map holds at most %d entries", maxStringMap)
		}
		v.SDM = make(map[string]float64, len(sdm))
		for _, k := range sortedKeys(sdm) {
			if k == "" || len(k) > maxStringValue {
				return v, fmt.Errorf("a map key is 1 to %d characters", maxStringValue)
			}
			if sdm[k] == nil {
				return v, fmt.Errorf("an object value must map strings to numbers")
			}
			v.SDM[k] = *sdm[k]
		}
	default:
		var n float64
		if err := strictUnmarshal(raw, &n); err != nil {
			return v, fmt.Errorf("must be a string, a number, a list of strings or an object of numbers")
		}
		v.N = &n
	}
	return v, nil
}

// sortedKeys returns m's keys in order, so that of several errors the
// same one is always reported.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
