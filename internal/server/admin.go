package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/hoistgg/hoist/internal/api"
)

// Admin actions: POST /hoist/admin/<Action> with a JSON body, signed with
// SigV4 (service gamelift) like the API; answered with a JSON body, or an
// error {"__type": code, "message": text} with the error's HTTP status.
// `hoist admin` is the client.

// SetGameServerInstanceStatusInput sets a FleetIQ instance's status: the
// operator's stand-in for what GameLift does when EC2 reclaims a Spot
// instance or scales a group in.
type SetGameServerInstanceStatusInput struct {
	GameServerGroupName string
	InstanceId          string
	InstanceStatus      string
}

// maxAdminBody bounds an admin request body.
const maxAdminBody = 64 << 10

func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.URL.Path, "/hoist/admin/")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeAdminError(w, "MethodNotAllowedException", "admin actions are POST requests", http.StatusMethodNotAllowed)
		return
	}
	if err := s.auth.Precheck(r); err != nil { // before any body is read
		s.writeAdminErr(w, err)
		return
	}
	if r.ContentLength > maxAdminBody { // refused unread, before it takes any of the bodies' bytes
		writeAdminError(w, "RequestEntityTooLargeException", "the request body is larger than 64 KiB", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if le := (*limitError)(nil); errors.As(err, &le) {
		s.writeAdminErr(w, err)
		return
	}
	if err != nil || len(body) > maxAdminBody {
		writeAdminError(w, "SerializationException", "the request body could not be read or is larger than 64 KiB", http.StatusBadRequest)
		return
	}
	ctx, err := s.auth.Authenticate(r, body)
	if err != nil {
		s.writeAdminErr(w, err)
		return
	}
	var out any
	switch action {
	case "SetGameServerInstanceStatus":
		var in SetGameServerInstanceStatusInput
		if err = decodeAdmin(body, &in); err == nil {
			err = requireFields(map[string]string{"GameServerGroupName": in.GameServerGroupName,
				"InstanceId": in.InstanceId, "InstanceStatus": in.InstanceStatus})
		}
		if err == nil {
			err = s.fleetiq.SetInstanceStatus(ctx, in.GameServerGroupName, in.InstanceId, in.InstanceStatus)
		}
		out = struct{}{}
	case "SendTestEvent":
		var in SendTestEventInput
		if err = decodeAdmin(body, &in); err == nil {
			out, err = s.sendTestEvent(ctx, in)
		}
	default:
		var known bool
		if out, known, err = s.hostsAdmin(ctx, action, body); !known {
			out, known, err = s.clockAdmin(ctx, action, body)
		}
		if !known {
			writeAdminError(w, "UnknownOperationException", "no admin action "+quoteClip(action)+" (known: SetGameServerInstanceStatus, SendTestEvent, "+hostsActions+", "+clockActions+")", http.StatusNotFound)
			return
		}
	}
	if err != nil {
		s.writeAdminErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func decodeAdmin(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return api.NewInvalidRequestException("the request body is not the action's JSON object: %s", err.Error())
	}
	return nil
}

func requireFields(fields map[string]string) error {
	for _, name := range []string{"GameServerGroupName", "InstanceId", "InstanceStatus"} {
		if v, ok := fields[name]; ok && v == "" {
			return api.NewInvalidRequestException("%s is required", name)
		}
	}
	return nil
}

func (s *Server) writeAdminErr(w http.ResponseWriter, err error) {
	var ae api.Error
	if errors.As(err, &ae) {
		writeAdminError(w, ae.ErrorCode(), ae.ErrorMessage(), ae.HTTPStatus())
		return
	}
	s.log.Error("admin action", "err", err)
	writeAdminError(w, "InternalServiceException", "internal error", http.StatusInternalServerError)
}

func writeAdminError(w http.ResponseWriter, code, msg string, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func quoteClip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}
