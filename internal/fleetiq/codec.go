package fleetiq

import (
	"encoding/json"
	"strconv"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/flatjson"
)

// The game server and instance records are read and written by every claim
// and update, so they have codecs without reflection. The stored form is
// exactly what encoding/json makes of the structs' tags (FuzzRecordCodecs
// checks both ways); a record the fast decoder does not understand is
// decoded by encoding/json.

// recordDecoder is implemented by records with a fast decoder.
type recordDecoder interface{ decodeJSON(data []byte) error }

func (g *serverRec) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = flatjson.AppendString(b, g.ID)
	b = append(b, `,"g":`...)
	b = flatjson.AppendString(b, g.Group)
	b = append(b, `,"i":`...)
	b = flatjson.AppendString(b, g.Instance)
	if g.Conn != nil {
		b = append(b, `,"c":`...)
		b = flatjson.AppendString(b, *g.Conn)
	}
	if g.Data != nil {
		b = append(b, `,"d":`...)
		b = flatjson.AppendString(b, *g.Data)
	}
	if g.Utilized {
		b = append(b, `,"u":true`...)
	}
	if g.Claimed {
		b = append(b, `,"cl":true`...)
	}
	if g.LastClaim != 0 {
		b = append(b, `,"lc":`...)
		b = strconv.AppendInt(b, g.LastClaim, 10)
	}
	b = append(b, `,"r":`...)
	b = strconv.AppendInt(b, g.Registered, 10)
	if g.LastHealth != 0 {
		b = append(b, `,"h":`...)
		b = strconv.AppendInt(b, g.LastHealth, 10)
	}
	return append(b, '}')
}

func (g *serverRec) decodeJSON(data []byte) error {
	var v serverRec
	ok := flatjson.Each(data, func(key []byte, kind byte, val []byte) (ok bool) {
		switch string(key) {
		case "id":
			v.ID, ok = str(kind, val)
		case "g":
			v.Group, ok = str(kind, val)
		case "i":
			v.Instance, ok = str(kind, val)
		case "c":
			v.Conn, ok = strPtr(kind, val)
		case "d":
			v.Data, ok = strPtr(kind, val)
		case "u":
			v.Utilized, ok = boolean(kind)
		case "cl":
			v.Claimed, ok = boolean(kind)
		case "lc":
			v.LastClaim, ok = integer(kind, val)
		case "r":
			v.Registered, ok = integer(kind, val)
		case "h":
			v.LastHealth, ok = integer(kind, val)
		default:
			ok = false // encoding/json matches keys case-insensitively
		}
		return ok
	})
	if !ok {
		return json.Unmarshal(data, g)
	}
	*g = v
	return nil
}

func (i *instanceRec) appendJSON(b []byte) []byte {
	b = append(b, `{"g":`...)
	b = flatjson.AppendString(b, i.Group)
	b = append(b, `,"i":`...)
	b = flatjson.AppendString(b, i.ID)
	b = append(b, `,"s":`...)
	b = flatjson.AppendString(b, string(i.Status))
	b = append(b, `,"a":`...)
	b = strconv.AppendInt(b, int64(i.Available), 10)
	b = append(b, `,"b":`...)
	b = strconv.AppendInt(b, int64(i.Busy), 10)
	return append(b, '}')
}

func (i *instanceRec) decodeJSON(data []byte) error {
	var v instanceRec
	ok := flatjson.Each(data, func(key []byte, kind byte, val []byte) (ok bool) {
		var s string
		var n int64
		switch string(key) {
		case "g":
			v.Group, ok = str(kind, val)
		case "i":
			v.ID, ok = str(kind, val)
		case "s":
			s, ok = str(kind, val)
			v.Status = api.GameServerInstanceStatus(s)
		case "a":
			n, ok = integer(kind, val)
			v.Available = int(n)
			ok = ok && int64(v.Available) == n
		case "b":
			n, ok = integer(kind, val)
			v.Busy = int(n)
			ok = ok && int64(v.Busy) == n
		default:
			ok = false
		}
		return ok
	})
	if !ok {
		return json.Unmarshal(data, i)
	}
	*i = v
	return nil
}

// The value readers report false for anything the fast path leaves to
// encoding/json (null for a non-pointer, a number that is not a whole one).

func str(kind byte, val []byte) (string, bool) {
	return string(val), kind == flatjson.String
}

func strPtr(kind byte, val []byte) (*string, bool) {
	switch kind {
	case flatjson.Null:
		return nil, true
	case flatjson.String:
		s := string(val)
		return &s, true
	}
	return nil, false
}

func boolean(kind byte) (bool, bool) {
	return kind == flatjson.True, kind == flatjson.True || kind == flatjson.False
}

func integer(kind byte, val []byte) (int64, bool) {
	if kind != flatjson.Number {
		return 0, false
	}
	return flatjson.Int(val)
}
