//go:build unix

package devstack

import "syscall"

// sysProcAttr puts each process in a process group of its own, so that a
// terminal's Ctrl-C reaches the launcher alone, which then stops the
// processes in order.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
