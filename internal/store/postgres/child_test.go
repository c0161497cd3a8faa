package postgres

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/hoistgg/hoist/internal/store"
)

// TestChildSQLArguments: for every combination of the two queries'
// filters, FirstWithChild's statement numbers as many placeholders as it
// gets arguments, the ID's offset (1-based) is the one after the child's
// Key prefix, and the child's Key is that prefix followed by the
// record's ID from there.
func TestChildSQLArguments(t *testing.T) {
	ph := regexp.MustCompile(`\$(\d+)`)
	for mask := range 1 << 5 {
		q := store.Query{Kind: "P", Order: store.OrderRankAsc}
		child := store.Query{Kind: "C", Key: "A/", HasKey: true, Order: store.OrderRankAsc, SkipHeld: true}
		q.HasParent, q.Parent = mask&1 != 0, "g"
		q.HasKey, q.Key = mask&2 != 0, "on"
		q.HasRankMax, q.RankMax = mask&4 != 0, 9
		child.HasParent, child.Parent = mask&8 != 0, "g"
		child.HasRankMax, child.RankMax = mask&16 != 0, 7
		for _, lock := range []bool{false, true} {
			pp, err := planQuery(q, false, lock)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := planQuery(child, false, lock)
			if err != nil {
				t.Fatal(err)
			}
			sql := childSQL(pp.shape, cp.shape)
			args := childArgs(pp, cp, child, 2)
			maxN := 0
			for _, m := range ph.FindAllStringSubmatch(sql, -1) {
				n, _ := strconv.Atoi(m[1])
				maxN = max(maxN, n)
			}
			if maxN != len(args) {
				t.Fatalf("mask %05b lock %v: %d placeholders, %d arguments (%v):\n%s", mask, lock, maxN, len(args), args, sql)
			}
			prefix := regexp.MustCompile(`key = \$(\d+) \|\| substr\(p\.id, \$(\d+)\)`).FindStringSubmatch(sql)
			if prefix == nil {
				t.Fatalf("mask %05b: no child key in\n%s", mask, sql)
			}
			pi, _ := strconv.Atoi(prefix[1])
			fi, _ := strconv.Atoi(prefix[2])
			if string(args[pi-1].([]byte)) != "A/" || args[fi-1] != any(int32(3)) {
				t.Errorf("mask %05b: the prefix is %v and the offset %v, want A/ and 3", mask, args[pi-1], args[fi-1])
			}
		}
	}
}
