package hosting

import "fmt"

// LogsElsewhere is the error of a log read on a replica whose data
// directory does not hold the log: Replica (the replica named by the
// log's record) does. The replica asked streams it from there.
type LogsElsewhere struct {
	Replica string
}

// Error says where the log is.
func (e *LogsElsewhere) Error() string {
	return fmt.Sprintf("the log is held by Hoist replica %s", e.Replica)
}
