package flexmatch

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// The search's bounds: candidates tried per anchor, region and expansion
// level, and tickets a gathering may pass over (already excluded, too young,
// too far, too large for the open slots) before it gives up.
// maxEvaluations bounds the candidates evaluated for one anchor over all
// its regions and levels, so that a rule set whose rules rarely hold costs
// a bounded time per ticket; maxLevels bounds the expansion levels tried
// per anchor and region (the anchor's, the ones below it, and level 0).
//
// maxPassWork bounds one whole pass, in units of work: a ticket a
// gathering visits, a sort key computed, a player times the rules of a
// candidate evaluated, a value an expression or rule visits. It is counted,
// not timed, so a pass stays a function of its inputs. Anchors are served
// oldest first and each pass serves at least one, so the oldest tickets
// always progress; when the budget runs out the rest wait for the next
// pass (Result.Exhausted).
const (
	maxPassWork    = 5_000_000
	maxAttempts    = 4
	maxShuffles    = 2
	scanSlack      = 64
	maxEvaluations = 16
	maxLevels      = 4
)

// Match runs one matcher pass over the pool of searching tickets at time
// now. The same (pool, now, seed) always gives the same result. No ticket is
// in two matches. docs/flexmatch-matcher.md describes the search.
func (rs *RuleSet) Match(pool []Ticket, now time.Time, seed uint64) Result {
	m := newMatcher(rs, pool, now, seed)
	m.run()
	m.res.Work = m.work
	return m.res
}

// tinfo is what the matcher knows of one ticket of the pool.
type tinfo struct {
	t     *Ticket
	key   float64 // the gathering key (hints.keyAttr, party aggregated)
	bal   float64 // the balancing value (balancedAttribute or the key)
	age   time.Duration
	level int32 // expansion steps the ticket's age has reached
	size  int32
	rank  int32 // position in the anchor order
	e0    int32 // bucket entries: ents[e0 : e0+ne]
	ne    int32
	spos  int32 // position in matcher.skeys while sorting
	used  bool
	bf    bool
	// held is the rule that makes the ticket unmatchable whatever the
	// pool (no region under the latency rule's maxLatency, a party whose
	// string batch attribute differs, a backfill player on no team).
	held string
}

// bucket is the tickets that may share a match by region (latency rule)
// and string batch value, sorted by key, with a linked list over the
// positions of the tickets not matched yet.
type bucket struct {
	ids        []int32
	keys       []float64
	lat        []int32
	prev, next []int32
	live       int
}

// bent is a ticket's entry in a bucket.
type bent struct{ b, pos int32 }

type matcher struct {
	rs    *RuleSet
	alg   algo
	now   time.Time
	rng   *rand.Rand
	tk    []tinfo
	prep  []*prepared // by pool index
	order []int32
	bk    []bucket
	ents  []bent
	waits []time.Duration
	views []*view
	hs    []hints
	tidx  map[string]int
	teams []teamSpec // the team bounds of the level being gathered
	res   Result

	// scratch of the anchor being served
	sel      []int32 // selected tickets, anchor first
	selTeam  []int32 // team of each selected ticket (its party's team)
	cnt      []int   // players per team
	sum      []float64
	excl     []int32
	budget   int // evaluations left for the anchor
	work     int // units of work of the pass so far (maxPassWork)
	cand     candidate
	metrics  map[string]*RuleMetric
	regs     []bent
	tmp      []int32
	tmpTeams []int32
	pool     []int32   // tickets collected for the sort rules, anchor first
	skeys    []float64 // their sort keys, by tinfo.spos
	sk1      []float64
	xlo, xhi []float64 // spreads of hints.extra in the selection
}

func newMatcher(rs *RuleSet, pool []Ticket, now time.Time, seed uint64) *matcher {
	m := &matcher{rs: rs, alg: rs.matcherAlgo(), now: now,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	m.waits = rs.expansionWaits()
	for l := 0; l <= len(m.waits); l++ {
		var age time.Duration
		if l > 0 {
			age = m.waits[l-1]
		}
		v := rs.viewAt(age)
		m.views = append(m.views, v)
		m.hs = append(m.hs, rs.matcherHints(v, m.alg))
	}
	nt := len(rs.teams)
	m.tidx = make(map[string]int, nt)
	for i, t := range rs.teams {
		m.tidx[t.name] = i
	}
	m.cnt = make([]int, nt)
	m.sum = make([]float64, nt)
	m.cand.teams = make([][]member, nt)
	m.metrics = map[string]*RuleMetric{}

	n := len(pool)
	m.tk = make([]tinfo, n)
	m.prep = make([]*prepared, n)
	m.order = make([]int32, n)
	for i := range pool {
		t := &pool[i]
		ti := &m.tk[i]
		ti.t, ti.bf, ti.size = t, t.Backfill, int32(len(t.Players))
		ti.age = max(now.Sub(t.Start), 0)
		ti.level = int32(m.levelOf(ti.age))
		m.order[i] = int32(i)
	}
	group := func(i int32) int {
		if !m.tk[i].bf {
			return 1
		}
		switch m.alg.backfillPriority {
		case "high":
			return 0
		case "low":
			return 2
		}
		return 1
	}
	slices.SortFunc(m.order, func(a, b int32) int {
		if c := cmp.Compare(group(a), group(b)); c != 0 {
			return c
		}
		ta, tb := m.tk[a].t, m.tk[b].t
		if c := ta.Start.Compare(tb.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(ta.ID, tb.ID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for r, i := range m.order {
		m.tk[i].rank = int32(r)
	}
	m.index()
	return m
}

// levelOf is the number of expansion steps an age has reached.
func (m *matcher) levelOf(age time.Duration) int {
	return sort.Search(len(m.waits), func(i int) bool { return m.waits[i] > age })
}

// index computes every ticket's key and buckets.
func (m *matcher) index() {
	// The most relaxed hints over the levels decide bucket membership;
	// each gathering checks its own level's.
	h := m.hs[0]
	maxLat := 0
	for _, x := range m.hs {
		maxLat = max(maxLat, x.maxLatency)
		if x.latencyRule != "" {
			h.latencyRule, h.latIdx = x.latencyRule, x.latIdx
		}
	}
	balAttr := m.balAttr()
	bmap := map[string]int32{}
	type raw struct{ id, lat int32 }
	var members [][]raw
	var regs []string
	var lats []int32
	for _, i := range m.order {
		ti := &m.tk[i]
		t := ti.t
		pr := m.rs.prepare(t)
		m.prep[i] = pr
		switch {
		case h.keyRule >= 0:
			ti.key = pr.key[h.keyRule]
		case h.keyAttr >= 0:
			ti.key = m.rs.partyNumber(t, pr, h.keyAttr, aggAvg, mapKeyNone)
		}
		if math.IsNaN(ti.key) {
			// Without a value a batchDistance rule fails; a sort rule
			// puts the ticket last.
			ti.key = math.Inf(1)
			if !math.IsInf(h.spread, 1) {
				ti.held = h.spreadRule
			}
		}
		for _, x := range h.extra {
			if math.IsNaN(pr.key[x.idx]) {
				ti.held = x.name
			}
		}
		if balAttr == h.keyAttr {
			ti.bal = ti.key
		} else if balAttr >= 0 {
			ti.bal = m.rs.partyNumber(t, pr, balAttr, aggAvg, mapKeyNone)
		}
		if math.IsNaN(ti.bal) || math.IsInf(ti.bal, 0) {
			ti.bal = 0
		}
		if len(t.Players) == 0 {
			ti.held = "teams"
		}
		if ti.bf {
			for k := range t.Players {
				if tm := t.Players[k].Team; tm != "" {
					if _, ok := m.tidx[tm]; !ok {
						ti.held = "teams"
					}
				}
			}
		}
		sv := ""
		if h.strAttr >= 0 {
			if !pr.keyOK[h.strIdx] {
				ti.held = h.strRule
			}
			sv = "\x00" + pr.keyStr[h.strIdx]
		}
		regs, lats = regs[:0], lats[:0]
		if maxLat > 0 {
			// pr.lat: the ticket's latency per region, sorted by region.
			if pr.lat != nil && h.latIdx >= 0 {
				for _, rl := range pr.lat[h.latIdx] {
					if rl.ms <= float64(maxLat) {
						regs = append(regs, rl.region)
						lats = append(lats, int32(math.Ceil(rl.ms)))
					}
				}
			}
			if len(regs) == 0 && ti.held == "" {
				ti.held = h.latencyRule
			}
		} else {
			regs = append(regs, "")
			lats = append(lats, 0)
		}
		if ti.held != "" {
			continue
		}
		ti.e0, ti.ne = int32(len(m.ents)), int32(len(regs))
		for k, r := range regs {
			name := r + sv
			b, ok := bmap[name]
			if !ok {
				b = int32(len(members))
				bmap[name] = b
				members = append(members, nil)
			}
			members[b] = append(members[b], raw{i, lats[k]})
			m.ents = append(m.ents, bent{b: b})
		}
	}
	m.bk = make([]bucket, len(members))
	for b, ms := range members {
		slices.SortFunc(ms, func(x, y raw) int {
			if c := cmp.Compare(m.tk[x.id].key, m.tk[y.id].key); c != 0 {
				return c
			}
			return cmp.Compare(m.tk[x.id].rank, m.tk[y.id].rank)
		})
		k := len(ms)
		bu := &m.bk[b]
		bu.ids, bu.keys, bu.lat = make([]int32, k), make([]float64, k), make([]int32, k)
		bu.prev, bu.next = make([]int32, k), make([]int32, k)
		bu.live = k
		for p, x := range ms {
			bu.ids[p], bu.keys[p], bu.lat[p] = x.id, m.tk[x.id].key, x.lat
			bu.prev[p], bu.next[p] = int32(p-1), int32(p+1)
			ti := &m.tk[x.id]
			for e := ti.e0; e < ti.e0+ti.ne; e++ {
				if m.ents[e].b == int32(b) {
					m.ents[e].pos = int32(p)
				}
			}
		}
		if k > 0 {
			bu.next[k-1] = -1
		}
	}
}

// run serves every ticket in anchor order.
func (m *matcher) run() {
	for _, i := range m.order {
		if m.tk[i].used {
			continue
		}
		if m.work >= maxPassWork {
			// Out of budget: the rest wait for the next pass.
			m.res.Exhausted = true
			if m.res.Held == nil {
				m.res.Held = map[string][]string{}
			}
			m.res.Held[m.tk[i].t.ID] = []string{}
			continue
		}
		if reasons, ok := m.anchor(i); !ok {
			if m.res.Held == nil {
				m.res.Held = map[string][]string{}
			}
			m.res.Held[m.tk[i].t.ID] = reasons
		}
	}
	// A ticket held as an anchor may have been matched by a later one.
	for _, mt := range m.res.Matches {
		for _, id := range mt.Tickets {
			delete(m.res.Held, id)
		}
	}
}

// anchor tries to form a match around ticket a, region by region and,
// with expansionAgeSelection newest, from the anchor's expansion level
// down (a match is as old as its newest ticket, so only tickets at least
// as old as a level's step can form a match of that level). It returns the
// rules that failed on the best candidate when no match formed.
func (m *matcher) anchor(a int32) ([]string, bool) {
	ta := &m.tk[a]
	if ta.held != "" {
		return []string{ta.held}, false
	}
	m.regs = append(m.regs[:0], m.ents[ta.e0:ta.e0+ta.ne]...)
	if len(m.regs) > 1 {
		slices.SortStableFunc(m.regs, func(x, y bent) int {
			if m.alg.batching == batchLargestPopulation {
				if c := cmp.Compare(m.bk[y.b].live, m.bk[x.b].live); c != 0 {
					return c
				}
			}
			return cmp.Compare(m.bk[x.b].lat[x.pos], m.bk[y.b].lat[y.pos])
		})
	}
	for _, x := range m.metrics {
		x.Passed, x.Failed = 0, 0
	}
	var best []string
	var cut []string
	m.budget = maxEvaluations
	for _, e := range m.regs {
		if m.work >= maxPassWork {
			break
		}
		lowest := 0
		if m.alg.oldest {
			lowest = int(ta.level)
		}
		for lvl := int(ta.level); lvl >= lowest; lvl-- {
			if lvl > 0 && lvl < int(ta.level)-maxLevels+2 {
				lvl = 0 // many steps: the top levels, then the rule set as written
			}
			minLevel := int32(lvl)
			if m.alg.oldest {
				minLevel = 0
			}
			m.excl = m.excl[:0]
			shift := 0
			for attempt := 0; attempt < maxAttempts && m.budget > 0 && m.work < maxPassWork; attempt++ {
				ok, why := m.gather(a, e, lvl, minLevel, shift)
				if !ok && shift < 2 && slices.Contains(why, m.hs[lvl].spreadRule) {
					// The tickets nearest the anchor spread too far on
					// both sides: try the windows that end at the anchor.
					shift++
					attempt--
					continue
				}
				if !ok {
					cut = addNames(cut, why...)
					break
				}
				failed := m.try(true)
				if failed == nil {
					return nil, true
				}
				if best == nil || len(failed) < len(best) {
					best = failed
				}
				if attempt == 0 && !m.cand.backfill() && len(m.rs.teams) > 1 && !m.alg.balanced && m.teamDependent(failed) {
					for s := 0; s < maxShuffles && m.budget > 0 && m.work < maxPassWork; s++ {
						if m.shuffle() && m.try(false) == nil {
							return nil, true
						}
					}
				}
				if len(m.sel) < 2 {
					break
				}
				if lr := m.hs[lvl].latencyRule; lr != "" && slices.Contains(failed, lr) {
					m.excl = append(m.excl, m.slowest(a, e.b))
				} else {
					m.excl = append(m.excl, m.farthest(a))
				}
			}
		}
	}
	if best != nil {
		return best, false
	}
	return cut, false
}

// teamDependent reports whether a failed rule may hold with another team
// assignment of the same tickets (batchDistance and latency rules, and the
// pseudo-rule "teams", cannot).
func (m *matcher) teamDependent(failed []string) bool {
	for _, name := range failed {
		i := m.rs.ruleIndex(name)
		if i >= len(m.rs.rules) {
			continue
		}
		switch m.rs.rules[i].(type) {
		case *batchDistanceRule, *latencyRule:
		default:
			return true
		}
	}
	return false
}

// slowest is the selected ticket (not the anchor) with the highest
// latency to bucket b's region, the youngest among equals: the one a retry
// leaves out when the latency rule failed (its maxDistance).
func (m *matcher) slowest(a, b int32) int32 {
	best, bl := int32(-1), int32(-1)
	for _, j := range m.sel {
		if j == a {
			continue
		}
		tj := &m.tk[j]
		l := int32(0)
		for e := tj.e0; e < tj.e0+tj.ne; e++ {
			if m.ents[e].b == b {
				l = m.bk[b].lat[m.ents[e].pos]
			}
		}
		if best < 0 || l > bl || (l == bl && tj.rank > m.tk[best].rank) {
			best, bl = j, l
		}
	}
	return best
}

// farthest is the selected ticket (not the anchor) whose key is furthest
// from the anchor's, the youngest among equals: the one a retry leaves out.
func (m *matcher) farthest(a int32) int32 {
	ak := m.tk[a].key
	best, bd := int32(-1), -1.0
	for _, j := range m.sel {
		if j == a {
			continue
		}
		d := math.Abs(m.tk[j].key - ak)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if best < 0 || d > bd || (d == bd && m.tk[j].rank > m.tk[best].rank) {
			best, bd = j, d
		}
	}
	return best
}

func addNames(list []string, names ...string) []string {
	for _, n := range names {
		if n != "" && !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}

// backfill reports whether the candidate's first ticket is a backfill
// ticket.
func (c *candidate) backfill() bool { return len(c.tickets) > 0 && c.tickets[0].Backfill }

// place picks the team for a party of size players: the team below its
// minPlayers with the most open slots first, then the team with the most
// open slots; ties go to the team with the lowest balancing sum when
// balance is set, else the first. -1: no team has room.
func (m *matcher) place(size int, balance bool) int {
	best, bestBelow, bestOpen := -1, false, -1
	for i, t := range m.teams {
		open := t.max - m.cnt[i]
		if open < size {
			continue
		}
		below := m.cnt[i] < t.min
		switch {
		case best < 0, below && !bestBelow, below == bestBelow && open > bestOpen,
			balance && below == bestBelow && open == bestOpen && m.sum[i] < m.sum[best]:
			best, bestBelow, bestOpen = i, below, open
		}
	}
	return best
}

// resetTeams puts the anchor's seated players (a backfill ticket's players
// with a team) back on their teams and empties the rest.
func (m *matcher) resetTeams(a int32) {
	clear(m.cnt)
	clear(m.sum)
	ta := &m.tk[a]
	if !ta.bf {
		return
	}
	for k := range ta.t.Players {
		p := &ta.t.Players[k]
		if p.Team != "" {
			i := m.tidx[p.Team]
			m.cnt[i]++
			if b := m.balAttr(); b >= 0 {
				if v := m.prep[a].vals[k][b]; v.N != nil {
					m.sum[i] += *v.N
				}
			}
		}
	}
}

func (m *matcher) balAttr() int {
	if m.alg.balancedAttribute >= 0 {
		return m.alg.balancedAttribute
	}
	return m.hs[0].keyAttr
}

// unseated is the number of the ticket's players that need a team (all but
// a backfill ticket's players already on one).
func (m *matcher) unseated(i int32) int {
	ti := &m.tk[i]
	if !ti.bf {
		return int(ti.size)
	}
	n := 0
	for k := range ti.t.Players {
		if ti.t.Players[k].Team == "" {
			n++
		}
	}
	return n
}

// gather selects the anchor and its nearest tickets in bucket entry e that
// the level's hints allow, until every team is full or the bucket has no
// more. ok is whether the selection can fill every team to its
// minPlayers; why names the hints that kept tickets out when not.
//
// shift 0 gathers the tickets nearest the anchor's key; 1 and 2 gather
// nearest to half the spread below and above it (the anchor at one end
// of the window).
func (m *matcher) gather(a int32, e bent, lvl int, minLevel int32, shift int) (ok bool, why []string) {
	h := &m.hs[lvl]
	m.teams = m.views[lvl].teams
	bu := &m.bk[e.b]
	m.sel, m.selTeam = m.sel[:0], m.selTeam[:0]
	m.resetTeams(a)
	team := int32(-1)
	if n := m.unseated(a); n > 0 {
		t := m.place(n, false)
		if t < 0 {
			return false, []string{"teams"}
		}
		team = int32(t)
		m.cnt[t] += n
	}
	m.sel = append(m.sel, a)
	m.selTeam = append(m.selTeam, team)
	total, capacity := 0, 0
	for i, t := range m.teams {
		total += m.cnt[i]
		capacity += t.max
	}
	ak := m.tk[a].key
	klo, khi := ak, ak
	m.xlo, m.xhi = m.xlo[:0], m.xhi[:0]
	for _, x := range h.extra {
		k := m.prep[a].key[x.idx]
		m.xlo, m.xhi = append(m.xlo, k), append(m.xhi, k)
	}
	var extraCut []string
	center := ak
	switch {
	case math.IsInf(h.spread, 1):
	case shift == 1:
		center = ak - h.spread/2
	case shift == 2:
		center = ak + h.spread/2
	}
	l, r := bu.prev[e.pos], bu.next[e.pos]
	skipped := 0
	m.work++
	var spreadCut, latCut bool
	for total < capacity && (l >= 0 || r >= 0) && skipped <= scanSlack {
		var p int32
		takeLeft := r < 0
		if l >= 0 && r >= 0 {
			switch h.side {
			case 1:
				takeLeft = false
			case -1:
				takeLeft = true
			default:
				takeLeft = center-bu.keys[l] <= bu.keys[r]-center
			}
		}
		if takeLeft {
			p, l = l, bu.prev[l]
		} else {
			p, r = r, bu.next[r]
		}
		m.work++
		j := bu.ids[p]
		tj := &m.tk[j]
		k := bu.keys[p]
		if nk, xk := min(klo, k), max(khi, k); xk-nk > h.spread {
			// Every ticket further on this side is further still.
			spreadCut = true
			if takeLeft {
				l = -1
			} else {
				r = -1
			}
			continue
		}
		if tj.bf || tj.level < minLevel || slices.Contains(m.excl, j) {
			skipped++
			continue
		}
		if h.maxLatency > 0 && int(bu.lat[p]) > h.maxLatency {
			latCut = true
			skipped++
			continue
		}
		if h.sorts {
			// Collect more than the match holds; the sort rules pick.
			if len(m.pool) == 0 {
				m.pool = append(m.pool, a)
			}
			m.pool = append(m.pool, j)
			if len(m.pool) > 2*capacity+8 {
				break
			}
			continue
		}
		if x := m.outOfSpread(h, j); x != "" {
			extraCut = addNames(extraCut, x)
			skipped++
			continue
		}
		if !m.add(j, &total) {
			skipped++
			continue
		}
		klo, khi = min(klo, k), max(khi, k)
		m.widen(h, j)
	}
	if h.sorts && len(m.pool) > 1 {
		m.sortPool()
		for _, j := range m.pool[1:] {
			if total >= capacity {
				break
			}
			k := m.tk[j].key
			if nk, xk := min(klo, k), max(khi, k); xk-nk > h.spread {
				spreadCut = true
				continue
			}
			if x := m.outOfSpread(h, j); x != "" {
				extraCut = addNames(extraCut, x)
				continue
			}
			if m.add(j, &total) {
				klo, khi = min(klo, k), max(khi, k)
				m.widen(h, j)
			}
		}
	}
	m.pool = m.pool[:0]
	for i, t := range m.teams {
		if m.cnt[i] < t.min {
			if spreadCut {
				why = append(why, h.spreadRule)
			}
			if latCut {
				why = append(why, h.latencyRule)
			}
			why = append(why, extraCut...)
			return false, why
		}
	}
	if m.tk[a].bf && len(m.sel) < 2 {
		return false, nil
	}
	m.balance(a)
	return true, nil
}

// outOfSpread names the first other numeric batchDistance rule whose
// spread ticket j would widen past its maxDistance ("" when none).
func (m *matcher) outOfSpread(h *hints, j int32) string {
	for n, x := range h.extra {
		k := m.prep[j].key[x.idx]
		if max(m.xhi[n], k)-min(m.xlo[n], k) > x.max {
			return x.name
		}
	}
	return ""
}

// widen takes ticket j's keys into the spreads of the other numeric
// batchDistance rules.
func (m *matcher) widen(h *hints, j int32) {
	for n, x := range h.extra {
		k := m.prep[j].key[x.idx]
		m.xlo[n], m.xhi[n] = min(m.xlo[n], k), max(m.xhi[n], k)
	}
}

// add places ticket j on the team place picks and selects it; false when
// no team has room.
func (m *matcher) add(j int32, total *int) bool {
	size := int(m.tk[j].size)
	t := m.place(size, false)
	if t < 0 {
		return false
	}
	m.cnt[t] += size
	*total += size
	m.sel = append(m.sel, j)
	m.selTeam = append(m.selTeam, int32(t))
	return true
}

// sortPool orders the collected tickets after the first (the anchor) by
// the sort rules' keys (RuleSet.sortKey, relative to the anchor), then by
// anchor order.
func (m *matcher) sortPool() {
	a := m.pool[0]
	rest := m.pool[1:]
	m.skeys = m.skeys[:0]
	var ns int
	for n, j := range rest {
		m.sk1 = m.rs.sortKey(m.tk[j].t, m.prep[j], m.tk[a].t, m.prep[a], m.sk1)
		m.skeys = append(m.skeys, m.sk1...)
		ns = len(m.sk1)
		m.tk[j].spos = int32(n)
	}
	m.work += len(rest) * (ns + 1)
	slices.SortFunc(rest, func(x, y int32) int {
		kx := m.skeys[int(m.tk[x].spos)*ns : int(m.tk[x].spos+1)*ns]
		ky := m.skeys[int(m.tk[y].spos)*ns : int(m.tk[y].spos+1)*ns]
		if c := slices.Compare(kx, ky); c != 0 {
			return c
		}
		return cmp.Compare(m.tk[x].rank, m.tk[y].rank)
	})
}

// balance reassigns the selected tickets to teams: parties largest first,
// then by balancing value highest first, each to the team place picks
// with the lowest sum. When the parties do not fit that way, the
// gathering's assignment stays.
func (m *matcher) balance(a int32) {
	if len(m.rs.teams) < 2 {
		return
	}
	m.tmp = append(m.tmp[:0], m.sel...)
	start := 0
	if m.tk[a].bf {
		start = 1 // the backfill ticket's party keeps its team
	}
	rest := m.tmp[start:]
	slices.SortFunc(rest, func(x, y int32) int {
		tx, ty := &m.tk[x], &m.tk[y]
		if c := cmp.Compare(ty.size, tx.size); c != 0 {
			return c
		}
		if c := cmp.Compare(ty.bal, tx.bal); c != 0 {
			return c
		}
		return cmp.Compare(tx.rank, ty.rank)
	})
	m.resetTeams(a)
	if start == 1 && m.selTeam[0] >= 0 {
		m.cnt[m.selTeam[0]] += m.unseated(a)
	}
	teams := m.tmpTeams[:0]
	for _, j := range rest {
		t := m.place(int(m.tk[j].size), true)
		if t < 0 {
			return
		}
		m.cnt[t] += int(m.tk[j].size)
		m.sum[t] += m.tk[j].bal * float64(m.tk[j].size)
		teams = append(teams, int32(t))
	}
	copy(m.sel[start:], rest)
	copy(m.selTeam[start:], teams)
	m.tmpTeams = teams
}

// shuffle reassigns the selected tickets (but a backfill anchor) to teams
// in a random order; false when the parties did not fit that way.
func (m *matcher) shuffle() bool {
	m.resetTeams(m.sel[0])
	m.tmp = append(m.tmp[:0], m.sel...)
	m.rng.Shuffle(len(m.tmp), func(i, j int) { m.tmp[i], m.tmp[j] = m.tmp[j], m.tmp[i] })
	teams := append(m.tmpTeams[:0], make([]int32, len(m.tmp))...)
	for k, j := range m.tmp {
		t := m.place(int(m.tk[j].size), false)
		if t < 0 {
			return false
		}
		m.cnt[t] += int(m.tk[j].size)
		teams[k] = int32(t)
	}
	copy(m.sel, m.tmp)
	copy(m.selTeam, teams)
	m.tmpTeams = teams
	return true
}

// try builds the candidate of the selection, evaluates it at its age and,
// when every rule holds, commits it as a match. It returns the failed
// rules (nil: matched). countMetrics false is for variations of a
// candidate already counted: they are tested with view.holds and counted
// only when they match.
func (m *matcher) try(countMetrics bool) []string {
	c := &m.cand
	c.tickets, c.prep = c.tickets[:0], c.prep[:0]
	for i := range c.teams {
		c.teams[i] = c.teams[i][:0]
	}
	for n, j := range m.sel {
		tj := &m.tk[j]
		c.tickets = append(c.tickets, tj.t)
		pr := m.prep[j]
		c.prep = append(c.prep, pr)
		for k := range tj.t.Players {
			p := &tj.t.Players[k]
			team := int(m.selTeam[n])
			if p.Team != "" && tj.bf {
				team = m.tidx[p.Team]
			}
			c.teams[team] = append(c.teams[team], member{p: p, ticket: n, vals: pr.vals[k]})
		}
	}
	m.budget--
	v := m.rs.viewAt(m.rs.age(c, m.now))
	players := 0
	for _, ms := range c.teams {
		players += len(ms)
	}
	m.work += players * (1 + len(v.rules))
	for i, t := range v.teams {
		if n := len(c.teams[i]); n < t.min || n > t.max {
			return []string{"teams"}
		}
	}
	if !countMetrics {
		// A variation of a candidate already evaluated: the cheap test,
		// then the counted evaluation only for a match.
		if !v.holdsCounted(c, &m.work) {
			return notHeld
		}
	}
	if failed := v.evaluateCounted(c, m.metrics, &m.work); len(failed) > 0 {
		return failed
	}
	m.commit()
	return nil
}

// notHeld is what try reports for a variation that failed view.holds (it
// does not say which rule).
var notHeld = []string{}

// commit records the candidate as a match and takes its tickets out of
// the pool.
func (m *matcher) commit() {
	c := &m.cand
	mt := Match{Tickets: make([]string, len(m.sel)), Teams: make([]Team, len(c.teams))}
	for n, j := range m.sel {
		tj := &m.tk[j]
		mt.Tickets[n] = tj.t.ID
		tj.used = true
		for e := tj.e0; e < tj.e0+tj.ne; e++ {
			m.bk[m.ents[e].b].unlink(m.ents[e].pos)
		}
	}
	for i, ms := range c.teams {
		mt.Teams[i].Name = m.rs.teams[i].name
		mt.Teams[i].Players = make([]string, len(ms))
		for k, x := range ms {
			mt.Teams[i].Players[k] = x.p.ID
		}
	}
	if len(m.metrics) > 0 {
		mt.Metrics = make([]RuleMetric, 0, len(m.metrics))
		for _, x := range m.metrics {
			if x.Passed+x.Failed > 0 {
				mt.Metrics = append(mt.Metrics, *x)
			}
		}
		slices.SortFunc(mt.Metrics, func(x, y RuleMetric) int {
			return cmp.Or(cmp.Compare(m.rs.ruleIndex(x.Rule), m.rs.ruleIndex(y.Rule)), cmp.Compare(x.Rule, y.Rule))
		})
	}
	m.res.Matches = append(m.res.Matches, mt)
}

func (b *bucket) unlink(p int32) {
	pr, nx := b.prev[p], b.next[p]
	if pr >= 0 {
		b.next[pr] = nx
	}
	if nx >= 0 {
		b.prev[nx] = pr
	}
	b.live--
}
