package sessions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/fnv"
	"regexp"
	"strconv"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/paging"
	"github.com/hoistgg/hoist/internal/search"
	"github.com/hoistgg/hoist/internal/store"
)

// maxSearchPage is the most game sessions one SearchGameSessions page holds
// (also the page size when the request gives no Limit), as in GameLift.
const maxSearchPage = 20

// locationPattern is LocationStringModel's pattern.
var locationPattern = regexp.MustCompile(`^[A-Za-z0-9\-]+`)

// searchRequest is a checked SearchGameSessions request.
type searchRequest struct {
	fleetID, aliasID, location string
	filter                     search.Expr // nil: every ACTIVE session
	sort                       *search.Sort
	after                      *search.Key // from NextToken
	limit                      int
	afterRef                   bool   // after.Str is the sort value of the session after.ID
	fingerprint                string // binds a NextToken to the request
}

// SearchGameSessions finds a fleet's ACTIVE game sessions that match a
// filter expression, in the order of a sort expression, a page at a time.
func (s *Service) SearchGameSessions(ctx context.Context, in *api.SearchGameSessionsInput) (*api.SearchGameSessionsOutput, error) {
	req, err := checkSearch(in)
	if err != nil {
		return nil, err
	}
	var fleet string
	err = s.view(ctx, func(tx store.Tx) error {
		f, err := s.resolveFleet(ctx, tx, req.fleetID, req.aliasID)
		if err != nil {
			return err
		}
		fleet = api.ToString(f.Attributes.FleetId)
		if req.location != "" {
			if _, ok := fleetLocation(f, req.location); !ok {
				return api.NewInvalidRequestException("Location %s is not a location of fleet %s", req.location, fleet)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if req.after != nil && tokenFingerprint(fleet, req) != req.fingerprint {
		return nil, errBadSearchToken
	}
	if err := s.search.sync(ctx, s.cfg.Store, fleet); err != nil {
		return nil, err
	}
	if req.afterRef {
		k, ok := s.search.keyOf(fleet, req.after.ID, search.OrderBy(req.sort))
		if !ok {
			return nil, api.NewInvalidRequestException("NextToken continues after game session %s, which is no longer ACTIVE: search again from the start", req.after.ID)
		}
		req.after = &k
	}
	ids, keys := s.search.find(fleet, req)
	more := len(ids) > req.limit
	if more {
		ids, keys = ids[:req.limit], keys[:req.limit]
	}
	out := &api.SearchGameSessionsOutput{GameSessions: []api.GameSession{}}
	err = s.view(ctx, func(tx store.Tx) error {
		out.GameSessions = out.GameSessions[:0]
		for _, id := range ids {
			gs, err := getGameSession(ctx, tx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted since the index was read
			}
			if err != nil {
				return err
			}
			// A session that left ACTIVE since the index was read is left
			// out: search answers ACTIVE sessions only.
			if gs.Session.Status == api.GameSessionStatusActive {
				out.GameSessions = append(out.GameSessions, gs.Session)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if more {
		out.NextToken = api.String(encodeSearchToken(tokenFingerprint(fleet, req), keys[len(keys)-1]))
	}
	return out, nil
}

// find returns the IDs (and order keys) of up to limit+1 sessions of the
// fleet that match the request, in the request's order, after its cursor.
func (x *searchIndex) find(fleet string, req searchRequest) ([]string, []search.Key) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	tab := x.fleets[fleet]
	if tab == nil {
		return nil, nil
	}
	return tab.Search(req.filter, req.location, search.OrderBy(req.sort), req.after, req.limit+1)
}

// keyOf returns an indexed session's position in an order.
func (x *searchIndex) keyOf(fleet, id string, order search.Order) (search.Key, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	tab := x.fleets[fleet]
	if tab == nil {
		return search.Key{}, false
	}
	return tab.Key(id, order)
}

// checkSearch validates a request and parses its expressions.
func checkSearch(in *api.SearchGameSessionsInput) (searchRequest, error) {
	req := searchRequest{fleetID: api.ToString(in.FleetId), aliasID: api.ToString(in.AliasId),
		location: api.ToString(in.Location), limit: maxSearchPage}
	if (req.fleetID == "") == (req.aliasID == "") {
		return req, api.NewInvalidRequestException("give exactly one of FleetId or AliasId")
	}
	if in.Location != nil && (len(req.location) < 1 || len(req.location) > 64 || !locationPattern.MatchString(req.location)) {
		return req, api.NewInvalidRequestException("Location %q is not a location name (1 to 64 letters, digits and -)", req.location)
	}
	if in.Limit != nil {
		if *in.Limit < 1 {
			return req, api.NewInvalidRequestException("Limit must be at least 1")
		}
		req.limit = min(int(*in.Limit), maxSearchPage)
	}
	if in.FilterExpression != nil {
		e, err := search.ParseFilter(*in.FilterExpression)
		if err != nil {
			return req, api.NewInvalidRequestException("FilterExpression is invalid %v", err)
		}
		req.filter = e
	}
	if in.SortExpression != nil {
		srt, err := search.ParseSort(*in.SortExpression)
		if err != nil {
			return req, api.NewInvalidRequestException("SortExpression is invalid %v", err)
		}
		req.sort = &srt
	}
	if in.NextToken != nil {
		fp, key, ref, ok := decodeSearchToken(*in.NextToken)
		if !ok {
			return req, errBadSearchToken
		}
		req.fingerprint, req.after, req.afterRef = fp, &key, ref
	}
	return req, nil
}

// badTokenMessage is the answer to a NextToken this search did not issue:
// the same words as every other paginated operation.
const badTokenMessage = paging.Message

var errBadSearchToken = api.NewInvalidRequestException("%s", badTokenMessage)

// searchToken is a NextToken: the request's fingerprint and the last
// session's position in its order.
type searchToken struct {
	V   int        `json:"v"`
	Req string     `json:"r"`
	Key search.Key `json:"k"`
	// Ref says Key.Str was left out to keep the token within NextToken's
	// 1,024 characters (a very long name or property value): the next page
	// takes it from the session Key.ID names.
	Ref bool `json:"x,omitempty"`
}

// maxTokenLen is NextToken's longest value (NonZeroAndMaxString).
const maxTokenLen = 1024

// tokenFingerprint hashes what a token's page depends on: the fleet, the
// location and the expressions (as parsed, so spacing does not matter).
func tokenFingerprint(fleet string, req searchRequest) string {
	h := fnv.New64a()
	for _, part := range []string{fleet, req.location, exprString(req.filter), sortString(req.sort)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func exprString(e search.Expr) string {
	if e == nil {
		return ""
	}
	return e.String()
}

func sortString(s *search.Sort) string {
	if s == nil {
		return ""
	}
	return s.String()
}

func encodeSearchToken(fp string, k search.Key) string {
	b, _ := json.Marshal(searchToken{V: 1, Req: fp, Key: k})
	if base64.RawURLEncoding.EncodedLen(len(b)) > maxTokenLen {
		k.Str = ""
		b, _ = json.Marshal(searchToken{V: 1, Req: fp, Key: k, Ref: true})
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeSearchToken returns a token's fingerprint and key, and whether the
// key's string must be looked up (ref).
func decodeSearchToken(tok string) (fp string, k search.Key, ref, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", search.Key{}, false, false
	}
	var t searchToken
	if err := json.Unmarshal(b, &t); err != nil || t.V != 1 || t.Req == "" || t.Key.ID == "" {
		return "", search.Key{}, false, false
	}
	return t.Req, t.Key, t.Ref, true
}
