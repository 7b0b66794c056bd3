package terraform

import "syscall"

// sysProcAttr gives terraform what terraform-exec gives its own: it dies
// with Nova and has its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
