package taskemu

// Usage counts what Cloud Tasks bills as operations: every API call, answered
// or refused, and every dispatch attempt
// (https://cloud.google.com/tasks/pricing: "API calls and push delivery
// attempts"), so that a run can say how many operations a push costs.
type Usage struct {
	// Creates, Gets, Lists, Deletes and Runs count the API calls by method.
	Creates int64 `json:"creates"`
	Gets    int64 `json:"gets"`
	Lists   int64 `json:"lists"`
	Deletes int64 `json:"deletes"`
	Runs    int64 `json:"runs"`
	// Dispatches counts the attempts to deliver a task to its target,
	// retries and RunTask's included.
	Dispatches int64 `json:"dispatches"`
}

// Operations is the billed total: every API call and every dispatch.
func (u Usage) Operations() int64 {
	return u.Creates + u.Gets + u.Lists + u.Deletes + u.Runs + u.Dispatches
}

// Usage returns the operations counted since the emulator started.
func (e *Emulator) Usage() Usage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.usage
}
