package fleets

import (
	"bytes"
	"context"
	"strconv"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
	"github.com/hoistgg/hoist/internal/store"
)

// countedSession is what fleetMetrics needs of an ACTIVATING or ACTIVE
// game session.
type countedSession struct {
	status            api.GameSessionStatus
	location, compute string
	current, maximum  int
}

// countedStatuses are the statuses of the game sessions fleetMetrics
// counts.
var countedStatuses = []api.GameSessionStatus{api.GameSessionStatusActivating, api.GameSessionStatusActive}

// eachCountedSession calls fn with each ACTIVATING and ACTIVE game session
// of a fleet. It reads the few members it needs from each record's JSON
// (scanSession) rather than decoding it, which is most of the cost of
// fleetMetrics on a fleet of thousands of game sessions (the metrics
// scrape's, docs/performance.md); a record it cannot read so is decoded.
func eachCountedSession(ctx context.Context, tx store.Tx, fleetID string, fn func(countedSession)) error {
	for _, st := range countedStatuses {
		q := store.Query{Kind: hosting.KindGameSession, Parent: fleetID, HasParent: true, Key: string(st), HasKey: true}
		err := store.Each(ctx, tx, q, func(r store.Record) error {
			s, ok := scanSession(r.Data)
			if !ok {
				gs := new(hosting.GameSession)
				if err := store.Decode(r, gs); err != nil {
					return err
				}
				s = countedSession{location: api.ToString(gs.Session.Location), compute: api.ToString(gs.Session.ComputeName),
					current: int(api.ToInt32(gs.Session.CurrentPlayerSessionCount)), maximum: int(api.ToInt32(gs.Session.MaximumPlayerSessionCount))}
			}
			s.status = st
			fn(s)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scanSession reads a game session record's Location, ComputeName,
// CurrentPlayerSessionCount and MaximumPlayerSessionCount; false when one
// is missing or not in the form encoding/json writes it (a string without
// escapes, an integer).
func scanSession(data []byte) (countedSession, bool) {
	var s countedSession
	loc, ok1 := jsonString(data, "Location")
	comp, ok2 := jsonString(data, "ComputeName")
	cur, ok3 := jsonInt(data, "CurrentPlayerSessionCount")
	most, ok4 := jsonInt(data, "MaximumPlayerSessionCount")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return s, false
	}
	s.location, s.compute, s.current, s.maximum = loc, comp, cur, most
	return s, true
}

// jsonMember returns the start of the value of the member called name in
// a JSON document: the first `"name":`. A game session record holds each
// of the names scanSession reads once, and nowhere else: not in a nested
// object, and not in a string (whose quotes encoding/json escapes, so a
// string cannot hold `"name":`).
func jsonMember(data []byte, name string) ([]byte, bool) {
	var key [64]byte
	k := append(append(append(key[:0], '"'), name...), '"', ':')
	i := bytes.Index(data, k)
	if i < 0 {
		return nil, false
	}
	return data[i+len(k):], true
}

// jsonString reads the string value of member name; false when it is
// missing, not a string, or holds an escape.
func jsonString(data []byte, name string) (string, bool) {
	v, ok := jsonMember(data, name)
	if !ok || len(v) == 0 || v[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(v[1:], '"')
	if end < 0 || bytes.IndexByte(v[1:1+end], '\\') >= 0 {
		return "", false
	}
	return string(v[1 : 1+end]), true
}

// jsonInt reads the integer value of member name; false when it is
// missing or not an integer that fits an int32.
func jsonInt(data []byte, name string) (int, bool) {
	v, ok := jsonMember(data, name)
	if !ok {
		return 0, false
	}
	end := 0
	for end < len(v) && (v[end] == '-' || v[end] >= '0' && v[end] <= '9') {
		end++
	}
	if end == len(v) || (v[end] != ',' && v[end] != '}') {
		return 0, false // the document ends, or a fraction or exponent follows
	}
	n, err := strconv.ParseInt(string(v[:end]), 10, 32)
	return int(n), err == nil
}
