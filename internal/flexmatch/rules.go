package flexmatch

// The parsed rule set: the concrete representation Parse builds and the
// matcher type-switches on. Names of attributes and teams are resolved to
// indexes at parse time: attribute indexes index RuleSet.attrs (and a
// prepared player's values), team indexes index RuleSet.teams (quantity
// expanded).
//
// How the matcher uses the rule language:
//
//   - once per ticket, pr := rs.prepare(t) (immutable; keep it with the
//     ticket while it is in the pool);
//   - build candidates with rs.addTicket(c, t, pr, team) and undo with
//     c.pop() while searching; give every ticket its prepared form or
//     none (c.prep stays parallel to c.tickets);
//   - v := rs.viewAt(rs.age(c, now)) is the rule set in force (v.teams
//     for team sizes, v.rules for rule properties after expansions);
//   - v.holds(c) is the search's test (stops at the first failing rule,
//     allocation free); v.evaluate(c, metrics) names the failed rules and
//     counts metrics, for a formed match or to say why tickets are held;
//   - to search fast, type-switch on v.rules: a *batchDistanceRule at
//     index r has each ticket's value in pr.key[r] (numbers, NaN when
//     missing) or pr.keyStr[r] (strings, pr.keyOK[r] false when the
//     party has none), so sorting tickets by it and sliding a window of
//     maxDistance finds compatible tickets; a *latencyRule at index r has
//     pr.lat[r], the ticket's latency per region sorted by region, for
//     bucketing by region; v.regions(c, nil) lists the regions a formed
//     match may be placed in;
//   - rs.sortKey(t, pr, first, firstPr, dst) orders a batch under the
//     absoluteSort and distanceSort rules (ascending keys);
//     rs.algo.sortByAttributes with batchingPreference sorted.

// attrDef is a declared player attribute.
type attrDef struct {
	name string
	typ  AttrType
	// def is the declared default (nil when none). A player missing the
	// attribute gets it; without one the player cannot satisfy a rule that
	// reads the attribute.
	def *Value
}

// Strategies, batching preferences and other algorithm enums, as spelled
// in the rule language.
const (
	strategyExhaustive = "exhaustiveSearch"
	strategyBalanced   = "balanced"

	batchRandom            = "random"
	batchSorted            = "sorted"
	batchLargestPopulation = "largestPopulation"
	batchFastestRegion     = "fastestRegion"

	ageNewest = "newest"
	ageOldest = "oldest"
)

// algorithm is the rule set's algorithm object with defaults applied.
type algorithm struct {
	// strategy is strategyExhaustive (matches of at most 40 players) or
	// strategyBalanced (large matches, and allowed for small ones).
	strategy string
	// batchingPreference is batchRandom or batchSorted (exhaustive), or
	// batchLargestPopulation or batchFastestRegion (balanced).
	batchingPreference string
	// sortByAttributes are the attributes (indexes into RuleSet.attrs) the
	// batch is sorted by with batchSorted, most significant first.
	sortByAttributes []int
	// balancedAttribute is the number attribute (index into RuleSet.attrs)
	// balanced strategy evens out across teams; -1 when none.
	balancedAttribute int
	// backfillPriority is "normal", "high" or "low".
	backfillPriority string
	// expansionAgeSelection is ageNewest (the youngest ticket's age drives
	// expansions) or ageOldest.
	expansionAgeSelection string
}

// aggregation is how a rule folds a party's (multi-player ticket's) values
// into one.
type aggregation uint8

const (
	aggNone aggregation = iota // every player stands alone
	aggAvg
	aggMin
	aggMax
	aggUnion        // collection: union of the party's lists
	aggIntersection // collection: intersection of the party's lists
)

// cmpOp is a comparison operation.
type cmpOp uint8

const (
	opEq cmpOp = iota // =
	opNe              // !=
	opLt              // <
	opLe              // <=
	opGt              // >
	opGe              // >=
)

// collOp is a collection rule's operation.
type collOp uint8

const (
	collIntersection      collOp = iota // size of the intersection of every collection
	collContains                        // number of collections that contain the reference
	collRefIntersectCount               // per collection, size of its intersection with the reference
)

// rule is one rule of a view. Rules are immutable once a view is built;
// an expansion step makes a changed copy.
type rule interface {
	// ruleName is the rule's unique name.
	ruleName() string
}

// operand is a referenceValue: a literal (number, string or string list)
// or a property expression evaluated over the candidate.
type operand struct {
	kind operandKind
	num  float64
	str  string
	list []string
	expr *expr
}

type operandKind uint8

const (
	operandNumber operandKind = iota + 1
	operandString
	operandList
	operandExpr
)

// bound is an optional number property (minDistance, maxCount...).
type bound struct {
	set bool
	v   float64
}

// batchDistanceRule: every ticket of the match has its batchAttribute
// (party aggregated) within maxDistance of every other ticket's (numbers),
// or the same value (strings). Large matches use it to batch tickets.
type batchDistanceRule struct {
	name string
	// attr is the batchAttribute (index into RuleSet.attrs).
	attr int
	// str is true for a string attribute (values must be equal).
	str         bool
	maxDistance float64
	// agg is aggAvg (default), aggMin or aggMax.
	agg aggregation
}

// comparisonRule: every measured value compares with the reference by op;
// without a reference, op is opEq (all values equal) or opNe (all differ).
type comparisonRule struct {
	name         string
	measurements []*expr
	reference    *operand // nil: none
	op           cmpOp
	agg          aggregation // party aggregation of number attributes (aggAvg default)
}

// distanceRule: every measured number is within [minDistance,
// maxDistance] of the reference; without a reference, the spread (max -
// min) of the measured numbers is.
type distanceRule struct {
	name         string
	measurements []*expr
	reference    *operand // nil: none
	minDistance  bound
	maxDistance  bound
	agg          aggregation // aggAvg default
}

// collectionRule: a count over the measured collections (string lists)
// is within [minCount, maxCount] (see collOp).
type collectionRule struct {
	name         string
	measurements []*expr
	reference    *operand // string for contains, list for reference_intersection_count
	op           collOp
	minCount     bound
	maxCount     bound
	agg          aggregation // aggUnion (default) or aggIntersection
}

// compoundRule: a boolean statement over earlier rules' outcomes.
type compoundRule struct {
	name string
	stmt *boolExpr
}

// boolOp is a compound statement's node kind.
type boolOp uint8

const (
	boolRule boolOp = iota // leaf: the outcome of rule index rule
	boolAnd
	boolOr
	boolNot
	boolXor
)

// boolExpr is a compound rule statement.
type boolExpr struct {
	op boolOp
	// rule is the index (into the view's rules) of a leaf's rule.
	rule int
	args []*boolExpr
}

// latencyRule: there is a region where every ticket's latency (party
// aggregated, every player by default) is at most maxLatency and, when
// maxDistance is set, within maxDistance of the reference latency (the
// match's minimum, or average with distanceReference avg) in that region.
type latencyRule struct {
	name        string
	maxLatency  float64
	maxDistance bound
	// refAvg is true for distanceReference "avg" (default "min").
	refAvg bool
	agg    aggregation // aggMax (default: every player), aggAvg, aggMin
}

// sort key map selection for string_number_map sort attributes.
const (
	mapKeyNone = iota
	mapKeyMin  // minValue: the smallest value of the map
	mapKeyMax  // maxValue: the largest
)

// absoluteSortRule orders the batch by the ticket's (party aggregated)
// attribute value. It never fails.
type absoluteSortRule struct {
	name       string
	attr       int
	descending bool
	mapKey     int
	agg        aggregation // aggAvg default
}

// distanceSortRule orders the batch by the distance of the ticket's
// value from the batch's first ticket's. It never fails.
type distanceSortRule struct {
	name       string
	attr       int
	descending bool
	mapKey     int
	agg        aggregation
}

func (r *batchDistanceRule) ruleName() string { return r.name }
func (r *comparisonRule) ruleName() string    { return r.name }
func (r *distanceRule) ruleName() string      { return r.name }
func (r *collectionRule) ruleName() string    { return r.name }
func (r *compoundRule) ruleName() string      { return r.name }
func (r *latencyRule) ruleName() string       { return r.name }
func (r *absoluteSortRule) ruleName() string  { return r.name }
func (r *distanceSortRule) ruleName() string  { return r.name }

// expansion relaxes one property of teams or rules as a candidate ages.
type expansion struct {
	target expansionTarget
	steps  []expansionStep // waitTimeSeconds strictly increasing
}

// expansionTarget is what an expansion changes.
type expansionTarget struct {
	// teams are the team indexes (quantity expanded) for a team target;
	// nil for a rule target.
	teams []int
	// rule is the rule index for a rule target.
	rule int
	// property is the property name: minPlayers or maxPlayers for teams, a
	// number (or referenceValue) property for rules.
	property string
}

// expansionStep is one step: from waitTimeSeconds on, the property is value.
type expansionStep struct {
	wait  float64 // seconds
	value operand
}

// Property expressions.

// fnKind is a property expression function.
type fnKind uint8

const (
	fnNone fnKind = iota // a path
	fnMin
	fnMax
	fnAvg
	fnMedian
	fnSum
	fnCount
	fnStddev
	fnFlatten
	fnSetIntersection
)

// pathLevel is how deep a path goes.
type pathLevel uint8

const (
	levelPlayers  pathLevel = iota // teams[..].players: player IDs
	levelPlayerID                  // teams[..].players[playerId]
	levelAttr                      // teams[..].players.attributes[a]
)

// expr is a property expression: a function over an expression, or a path.
type expr struct {
	fn  fnKind
	arg *expr // fn != fnNone
	// A path (fn == fnNone):
	// teams are the team indexes it reads; allTeams for teams[*].
	teams    []int
	allTeams bool
	// nested is true when the path yields one list per team (teams[*] or
	// more than one team named); false for one team (a flat list).
	nested bool
	level  pathLevel
	attr   int // levelAttr: index into RuleSet.attrs
	// The expression's static type: depth is how many list levels its
	// value has (0: a single value; a string list attribute counts as one
	// level), num whether its leaves are numbers (else strings).
	depth int
	num   bool
}
