package service

// SetFailpointKill replaces what p's failpoints do when they fire, so that
// a test sees which fired instead of being killed.
func SetFailpointKill(p *Process, kill func(name string)) {
	p.failpoints.mu.Lock()
	defer p.failpoints.mu.Unlock()
	p.failpoints.kill = kill
}
