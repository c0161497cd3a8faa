package paging

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

func TestSorted(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		page, next, err := Sorted(all, id, token, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		if strings.Contains(next, page[len(page)-1]) {
			t.Errorf("token %q spells the key %q", next, page[len(page)-1])
		}
		token = next
	}
	if !slices.Equal(got, all) {
		t.Fatalf("pages hold %v, want %v", got, all)
	}
	// The item a token names was removed: the next page still starts after it.
	_, next, _ := Sorted(all, id, "", 2)
	page, _, err := Sorted([]string{"a", "c", "d"}, id, next, 2)
	if err != nil || !slices.Equal(page, []string{"c", "d"}) {
		t.Fatalf("after a removed item: %v, %v", page, err)
	}
}

func TestBadTokens(t *testing.T) {
	for _, tok := range []string{"b", "bogus-token", "fleet-1", "AQ", "!!", KeyToken("x") + "=",
		store.EncodeCursor(store.OrderCreated, false, &store.Record{Seq: 3})} {
		_, _, err := Sorted([]string{"a"}, func(s string) string { return s }, tok, 10)
		var ire *api.InvalidRequestException
		if !errors.As(err, &ire) || ire.Message != Message {
			t.Errorf("Sorted with token %q: %v, want InvalidRequestException %q", tok, err, Message)
		}
		if err := Check(tok, store.OrderID, false); !errors.As(err, &ire) {
			t.Errorf("Check(%q): %v", tok, err)
		}
	}
	if err := Err(errors.New("other")); err == nil || err.Error() != "other" {
		t.Errorf("Err changed another error: %v", err)
	}
}

// FuzzAfterKey: decoding a token never panics, and every key round-trips.
func FuzzAfterKey(f *testing.F) {
	f.Add("", "fleet-1")
	f.Add("bogus", "custom-x")
	f.Add(KeyToken("us-west-2"), "")
	f.Fuzz(func(t *testing.T, token, key string) {
		if k, err := AfterKey(token); err != nil && k != "" {
			t.Fatalf("AfterKey(%q) = %q with error %v", token, k, err)
		}
		if key == "" {
			return
		}
		k, err := AfterKey(KeyToken(key))
		if err != nil || k != key {
			t.Fatalf("AfterKey(KeyToken(%q)) = %q, %v", key, k, err)
		}
	})
}
