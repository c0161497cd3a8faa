package protocol

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/hoistgg/hoist/internal/api"
)

// fuzzHandler serves api.Unimplemented: every request that gets through
// decoding and validation ends in a 501, so a 500 is always a bug of the
// protocol layer (or of validation).
func fuzzHandler() http.Handler {
	return NewHandler(api.Unimplemented{}, Options{Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20})
}

// addSeeds adds, for a spread of operations, a fully populated input
// encoded by c, and a few hand-written bodies.
func addSeeds(f *testing.F, c codec, extra ...[]byte) {
	for i, op := range api.Operations() {
		if i%4 != 0 {
			continue
		}
		in := op.NewInput()
		n := 0
		fill(reflect.ValueOf(in).Elem(), 0, &n)
		var buf bytes.Buffer
		if err := c.encode(&buf, in); err != nil {
			f.Fatal(err)
		}
		f.Add(op.Name, buf.Bytes())
	}
	for _, b := range extra {
		f.Add("DescribeGameServer", b)
		f.Add("DescribeFleetEvents", b)
	}
	f.Add("", []byte{})
}

// checkFuzzResponse fails on a 500 and on a response without the headers
// every response carries.
func checkFuzzResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code == http.StatusInternalServerError {
		t.Fatalf("500: %q", rec.Body.Bytes())
	}
	if rec.Header().Get("x-amzn-RequestId") == "" {
		t.Fatal("no x-amzn-RequestId")
	}
	if rec.Code == http.StatusOK {
		t.Fatalf("200 from a service that implements nothing: %q", rec.Body.Bytes())
	}
}

func FuzzJSONRequest(f *testing.F) {
	addSeeds(f, jsonCodec{},
		[]byte(`{"GameServerGroupName":"g","GameServerId":"gs-1"}`),
		[]byte(`{"FleetId":"fleet-1","StartTime":"2020-01-28T13:29:57.293Z","Limit":1e400}`),
		[]byte(`{"StartTime":-1e308,"EndTime":1.5e-300}`),
		[]byte(`{"A":[{"B":{"C":[[[[null]]]]}}],"Tags":[{"Key":null}]}`),
	)
	h := fuzzHandler()
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.Header["X-Amz-Target"] = []string{"GameLift." + op}
		req.Header["Content-Type"] = []string{"application/x-amz-json-1.1"}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkFuzzResponse(t, rec)
		var e jsonError
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Type == "" || e.Type != rec.Header().Get("x-amzn-ErrorType") {
			t.Fatalf("error body %q (%v), x-amzn-ErrorType %q", rec.Body.Bytes(), err, rec.Header().Get("x-amzn-ErrorType"))
		}
	})
}

func FuzzCBORRequest(f *testing.F) {
	addSeeds(f, cborCodec{},
		[]byte("\xbf\x67FleetId\x7f\x65fleet\x62-1\xff\x69StartTime\xc1\xfb\x41\xd7\x8c\x0d\xd5\x52\xc0\x83\xff"),
		[]byte("\xa1\x69StartTime\xc1\xf9\x7e\x00"),                         // tag 1 around half-precision NaN
		[]byte("\xa1\x69StartTime\xc1\xfb\x7f\xf0\x00\x00\x00\x00\x00\x00"), // +Inf
		[]byte("\xa1\x69StartTime\xc1\x3b\x7f\xff\xff\xff\xff\xff\xff\xff"), // most negative int
		[]byte("\xa1\x64Tags\x9f\xa1\x63Key\xf7\xff"),
	)
	h := fuzzHandler()
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.URL.Path = cborPath + op
		req.Header["Smithy-Protocol"] = []string{"rpc-v2-cbor"}
		req.Header["Content-Type"] = []string{"application/cbor"}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkFuzzResponse(t, rec)
		if rec.Header().Get("smithy-protocol") != "rpc-v2-cbor" {
			t.Fatal("no smithy-protocol header")
		}
		var e cborError
		if err := cbor.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Type == "" {
			t.Fatalf("error body %x (%v)", rec.Body.Bytes(), err)
		}
	})
}
