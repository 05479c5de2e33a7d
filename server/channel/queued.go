package channel

// Queued returns how many dispatched messages wait behind a running turn
// of their session: the dispatcher's queue depth, for metrics. (A
// session's queue holds the messages not yet started; the one running has
// left it.)
func (d *AgentDispatcher) Queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, q := range d.queues {
		n += len(q)
	}
	return n
}
