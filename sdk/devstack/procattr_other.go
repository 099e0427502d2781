//go:build !unix

package devstack

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
