package sdkconn

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/hosting"
)

// Bounds of a StartMatchBackfill request. A game session holds at most 200
// players and a backfill needs at least one open slot, so it lists at most
// 199; FlexMatch takes at most 10 attributes per player. The model sets no
// bound on the entries of a latency map, a string list or a string-double
// map: Hoist takes at most maxBackfillEntries of each.
const (
	maxBackfillPlayers    = 199
	maxBackfillAttributes = 10
	maxBackfillEntries    = 100
)

// Attribute types of the SDK's PlayerAttributes (AttrType).
const (
	attrString          = "STRING"
	attrDouble          = "DOUBLE"
	attrStringList      = "STRING_LIST"
	attrStringDoubleMap = "STRING_DOUBLE_MAP"
)

// wirePlayer is one entry of the SDK's Players.
type wirePlayer struct {
	PlayerID         *string                   `json:"PlayerId"`
	Team             *string                   `json:"Team"`
	LatencyInMs      map[string]int32          `json:"LatencyInMs"`
	PlayerAttributes map[string]*wireAttribute `json:"PlayerAttributes"`
}

// wireAttribute is a player attribute as the SDK sends it: AttrType names
// the one value field that is set.
type wireAttribute struct {
	AttrType string             `json:"AttrType"`
	S        *string            `json:"S"`
	N        *float64           `json:"N"`
	SL       []string           `json:"SL"`
	SDM      map[string]float64 `json:"SDM"`
}

// parseBackfillPlayers reads the Players of a StartMatchBackfill request.
func parseBackfillPlayers(a *args) []api.Player {
	raw := a.r.raw("Players")
	if raw == nil {
		a.keep(fmt.Errorf("%s is required: list the game session's current players", "Players"))
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		a.keep(fieldError("Players", "an array of player objects"))
		return nil
	}
	switch n := len(list); {
	case n == 0:
		a.keep(fmt.Errorf("%s is empty: list the game session's current players", "Players"))
		return nil
	case n > maxBackfillPlayers:
		a.keep(fmt.Errorf("%s lists %d players: a backfill request takes at most %d", "Players", n, maxBackfillPlayers))
		return nil
	}
	out := make([]api.Player, 0, len(list))
	seen := make(map[string]bool, len(list))
	for i, r := range list {
		p, err := parseBackfillPlayer(i, r)
		if err != nil {
			a.keep(err)
			return nil
		}
		if seen[*p.PlayerId] {
			a.keep(fmt.Errorf("%s[%d].PlayerId repeats an earlier player", "Players", i))
			return nil
		}
		seen[*p.PlayerId] = true
		out = append(out, p)
	}
	return out
}

func parseBackfillPlayer(i int, raw json.RawMessage) (api.Player, error) {
	var w wirePlayer
	if json.Unmarshal(raw, &w) != nil {
		return api.Player{}, fmt.Errorf("%s[%d] must be an object with PlayerId, Team, LatencyInMs (region to integer milliseconds) and PlayerAttributes", "Players", i)
	}
	if w.PlayerID == nil || *w.PlayerID == "" {
		return api.Player{}, fmt.Errorf("%s[%d].PlayerId is required", "Players", i)
	}
	p := api.Player{PlayerId: w.PlayerID, Team: w.Team, LatencyInMs: w.LatencyInMs}
	if n := len(w.LatencyInMs); n > maxBackfillEntries {
		return api.Player{}, fmt.Errorf("%s[%d].LatencyInMs has %d regions: at most %d are taken", "Players", i, n, maxBackfillEntries)
	}
	if n := len(w.PlayerAttributes); n > maxBackfillAttributes {
		return api.Player{}, fmt.Errorf("%s[%d].PlayerAttributes has %d attributes: at most %d are allowed", "Players", i, n, maxBackfillAttributes)
	}
	if len(w.PlayerAttributes) > 0 {
		p.PlayerAttributes = make(map[string]api.AttributeValue, len(w.PlayerAttributes))
	}
	for name, attr := range w.PlayerAttributes {
		v, err := attr.value()
		if err != nil {
			return api.Player{}, fmt.Errorf("%s[%d].PlayerAttributes[%s]: %v", "Players", i, quoteName(name), err)
		}
		p.PlayerAttributes[name] = v
	}
	return p, nil
}

// quoteName quotes an attribute name for a message, shortened.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// value checks that AttrType names a type and that exactly its value is
// set, and returns the api form.
func (w *wireAttribute) value() (api.AttributeValue, error) {
	if w == nil {
		return api.AttributeValue{}, fmt.Errorf("must be an object with AttrType and its value")
	}
	set := 0
	for _, b := range []bool{w.S != nil, w.N != nil, w.SL != nil, w.SDM != nil} {
		if b {
			set++
		}
	}
	var v api.AttributeValue
	var ok bool
	switch w.AttrType {
	case attrString:
		v.S, ok = w.S, w.S != nil
	case attrDouble:
		v.N, ok = w.N, w.N != nil
	case attrStringList:
		v.SL, ok = w.SL, w.SL != nil
	case attrStringDoubleMap:
		v.SDM, ok = w.SDM, w.SDM != nil
	default:
		return v, fmt.Errorf("%s must be STRING, DOUBLE, STRING_LIST or STRING_DOUBLE_MAP", "AttrType")
	}
	if !ok || set != 1 {
		return v, fmt.Errorf("an attribute of AttrType %s carries exactly its value (%s)", w.AttrType,
			map[string]string{attrString: "S", attrDouble: "N", attrStringList: "SL", attrStringDoubleMap: "SDM"}[w.AttrType])
	}
	if len(v.SL) > maxBackfillEntries || len(v.SDM) > maxBackfillEntries {
		return v, fmt.Errorf("holds more than %d entries", maxBackfillEntries)
	}
	for _, n := range v.SDM {
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return v, fmt.Errorf("%s holds a number that is not finite", "SDM")
		}
	}
	return v, nil
}

// checkBackfillInput applies the model's constraints on StartMatchBackfill
// (lengths, patterns, latencies of at least 1 ms) to what the process sent.
func checkBackfillInput(req hosting.BackfillRequest) error {
	in := api.StartMatchBackfillInput{GameSessionArn: api.String(req.GameSessionArn),
		ConfigurationName: api.String(req.ConfigurationArn), Players: req.Players}
	if req.TicketID != "" {
		in.TicketId = api.String(req.TicketID)
	}
	if !ticketIDChars(req.TicketID) {
		return fmt.Errorf("%s may hold only letters, digits, '-' and '.'", "TicketId")
	}
	if err := in.Validate(); err != nil {
		// The model's name of the field is ConfigurationName; the SDK's is
		// MatchmakingConfigurationArn.
		return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), "'ConfigurationName'", "'MatchmakingConfigurationArn'"))
	}
	return nil
}

func startMatchBackfill(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	if pc.backfill == nil {
		return nil, backfillUnsupported()
	}
	if err := pc.s.allowBackfill(pc.id.ProcessID, "StartMatchBackfill"); err != nil {
		return nil, err
	}
	req := hosting.BackfillRequest{
		TicketID:         a.str("TicketId"),
		GameSessionArn:   a.need("GameSessionArn"),
		ConfigurationArn: a.need("MatchmakingConfigurationArn"),
	}
	if a.err == nil {
		req.Players = parseBackfillPlayers(a)
	}
	if a.err == nil {
		a.keep(checkBackfillInput(req))
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := pc.api.CheckGameSessionHost(ctx, pc.id, req.GameSessionArn); err != nil {
		return nil, err
	}
	id, err := pc.backfill.StartMatchBackfill(ctx, pc.id, req)
	if err != nil {
		return nil, err
	}
	return map[string]any{"TicketId": id}, nil
}

func stopMatchBackfill(ctx context.Context, pc *procConn, a *args) (map[string]any, error) {
	if pc.backfill == nil {
		return nil, backfillUnsupported()
	}
	if err := pc.s.allowBackfill(pc.id.ProcessID, "StopMatchBackfill"); err != nil {
		return nil, err
	}
	gs, conf, ticket := a.need("GameSessionArn"), a.need("MatchmakingConfigurationArn"), a.need("TicketId")
	if a.err == nil {
		a.keep(checkBackfillInput(hosting.BackfillRequest{TicketID: ticket, GameSessionArn: gs, ConfigurationArn: conf, Players: []api.Player{}}))
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := pc.api.CheckGameSessionHost(ctx, pc.id, gs); err != nil {
		return nil, err
	}
	return nil, pc.backfill.StopMatchBackfill(ctx, pc.id, gs, conf, ticket)
}

// backfillUnsupported answers backfill requests when no Backfiller is
// configured.
func backfillUnsupported() error {
	return &hosting.SDKError{Status: 400,
		Message: "match backfill is not available: no FlexMatch matchmaker is configured for this SDK endpoint"}
}

// ticketIDChars reports whether a ticket ID holds only the characters of
// the model's pattern for matchmaking IDs (which the model leaves
// unanchored; Hoist applies it to the whole ID).
func ticketIDChars(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
