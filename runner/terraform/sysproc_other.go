//go:build !linux

package terraform

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
