package terraform

import "syscall"

// sysProcAttr gives a terraform Nova starts itself what terraform-exec
// gives its own: it dies with Nova and has its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
