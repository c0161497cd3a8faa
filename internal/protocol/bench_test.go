package protocol

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// BenchmarkHandler measures one DescribeGameServer through the handler in
// each protocol (no network).
func BenchmarkHandler(b *testing.B) {
	h := NewHandler(fakeService{}, Options{Logger: slog.New(slog.DiscardHandler)})
	jsonBody := []byte(`{"GameServerGroupName":"group-1","GameServerId":"gs-1"}`)
	cborBody, _ := cbor.Marshal(map[string]string{"GameServerGroupName": "group-1", "GameServerId": "gs-1"})
	cases := map[string]struct {
		path   string
		header map[string]string
		body   []byte
	}{
		"json": {"/", map[string]string{"X-Amz-Target": "GameLift.DescribeGameServer", "Content-Type": "application/x-amz-json-1.1"}, jsonBody},
		"cbor": {cborPath + "DescribeGameServer", map[string]string{"Smithy-Protocol": "rpc-v2-cbor", "Content-Type": "application/cbor"}, cborBody},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", tc.path, bytes.NewReader(tc.body))
				for k, v := range tc.header {
					req.Header[k] = []string{v}
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
				}
			}
		})
	}
}
