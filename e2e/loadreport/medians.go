package loadreport

// GroupBy groups runs by key, the groups in the order of their first run.
func GroupBy[T any, K comparable](runs []T, key func(T) K) (order []K, groups map[K][]T) {
	groups = map[K][]T{}
	for _, r := range runs {
		k := key(r)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	return order, groups
}

// MedianOf returns the median of a figure of runs (0 for none).
func MedianOf[T any](runs []T, figure func(T) float64) float64 {
	v := make([]float64, 0, len(runs))
	for _, r := range runs {
		v = append(v, figure(r))
	}
	return Median(v)
}
